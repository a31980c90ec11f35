#!/usr/bin/env node
import { createLogger, loadConfigOrExit } from '@svc/runtime';
import { standaloneConfigSpec } from './config';
import { startStack } from './stack';

/** Composition root of the standalone stack (`npm start`): signals stop it from the first moment. */
const config = loadConfigOrExit(standaloneConfigSpec, process.env);
startStack(config, createLogger({ name: 'standalone', level: config.LOG_LEVEL }), process).catch((err: unknown) => {
  process.stderr.write(`standalone stack failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
