#!/usr/bin/env node
import { createLogger, loadConfigOrExit } from '@svc/runtime';
import { standaloneConfigSpec } from './config';
import { startStack } from './stack';

/** Composition root of the standalone stack (`npm start`). */
async function main(): Promise<void> {
  const config = loadConfigOrExit(standaloneConfigSpec, process.env);
  const logger = createLogger({ name: 'standalone', level: config.LOG_LEVEL });
  const stack = await startStack(config, logger);
  stack.lifecycle.installSignalHandlers(process);
}

main().catch((err: unknown) => {
  process.stderr.write(`standalone stack failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
