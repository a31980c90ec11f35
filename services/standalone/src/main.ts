#!/usr/bin/env node
import { createLogger, loadConfigOrExit } from '@svc/runtime';
import { startFailure } from '@svc/service';
import { standaloneConfigSpec } from './config';
import { startStack } from './stack';

/** Composition root of the standalone stack (`npm start`): signals stop it from the first moment. */
const config = loadConfigOrExit(standaloneConfigSpec, process.env);
startStack(config, createLogger({ name: 'standalone', level: config.LOG_LEVEL }), process).catch((err: unknown) => {
  process.stderr.write(`${startFailure('standalone stack', err)}\n`);
  process.exit(1);
});
