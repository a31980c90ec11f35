#!/usr/bin/env node
import { ConfigError, createLogger, loadConfig } from '@svc/runtime';
import { standaloneConfigSpec } from './config';
import { startStack } from './stack';

/** Composition root of the standalone stack (`npm start`). */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(standaloneConfigSpec, process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
  const logger = createLogger({ name: 'standalone', level: config.LOG_LEVEL });
  const stack = await startStack(config, logger);
  stack.lifecycle.installSignalHandlers(process);
}

main().catch((err: unknown) => {
  process.stderr.write(`standalone stack failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
