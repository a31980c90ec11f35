#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { busConfigSpec, createBus, prefixedTopics, type Bus } from '@svc/bus';
import { IdentifierHashKeysError, checkedIdentifierHashes, identifierHashConfigSpec, identityConfigSpec, masterKeyRing, rawLogKeyConfigSpec } from '@svc/identity';
import {
  AppError,
  ConnectionCheckError,
  createDb,
  databaseConnection,
  databaseTlsConfigSpec,
  createLogger,
  env,
  httpServiceConfigSpec,
  loadConfig,
  runMigrations,
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from '@svc/runtime';
import { connectorKeyConfigSpec, resolveSecretKey } from '@svc/conversions';
import { allMigrations } from '@svc/standalone';
import { USAGE, UsageError, commandHelp, overallHelp, parseFlags, resolveCommand, snakeCaseKeys, wantsHelp } from './cli';
import { InvalidInputError } from './command';

/**
 * svcctl: the admin CLI. Prints exactly one JSON object on stdout; on error a
 * JSON object on stderr and a non-zero exit (2 for bad arguments, 1 otherwise).
 * Works against DATABASE_URL, or the standalone stack's embedded database in
 * DATA_DIR (attaching to it while the stack runs, starting it briefly if not).
 */
const configSpec = {
  DATABASE_URL: env.url({ description: 'PostgreSQL URL; unset uses the embedded database in DATA_DIR', default: undefined, secret: true }),
  ...databaseTlsConfigSpec,
  DATA_DIR: env.string({ description: 'Data directory of the standalone stack (embedded database)', default: './.data' }),
  ...connectorKeyConfigSpec,
  ...rawLogKeyConfigSpec,
  ...identifierHashConfigSpec,
  // `replay` reads the log the services write.
  ...busConfigSpec,
  ...identityConfigSpec,
  // stderr carries the result's error object: only errors besides it, by default.
  LOG_LEVEL: { ...httpServiceConfigSpec.LOG_LEVEL, default: 'error' as const },
};

/** The product's version, which the CLI's own manifest carries (tools/svcctl/package.json, beside dist/). */
const VERSION = (JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;

async function main(argv: string[]): Promise<number> {
  // No words at all: a usage error, as JSON (scripts read it).
  if (argv.length === 0) {
    process.stdout.write(`${JSON.stringify({ usage: USAGE })}\n`);
    return 2;
  }
  if (argv[0] === '--version' || argv[0] === '-V') {
    process.stdout.write(`svcctl ${VERSION}\n`);
    return 0;
  }
  if (argv[0] === '--help' || argv[0] === '-h' || (argv[0] === 'help' && argv.length === 1)) {
    process.stdout.write(overallHelp(VERSION));
    return 0;
  }
  // `svcctl help <command>` and `svcctl <command> --help`.
  const asked = argv[0] === 'help' ? argv.slice(1) : wantsHelp(argv) ? argv.filter((w) => w !== '--help' && w !== '-h') : undefined;
  if (asked) {
    const { name, command } = resolveCommand(asked);
    process.stdout.write(commandHelp(name, command));
    return 0;
  }
  const { command, rest } = resolveCommand(argv);
  const values = parseFlags(command, rest);
  const config = loadConfig(configSpec, process.env);

  let embedded: EmbeddedPostgres | undefined;
  let connection = config.DATABASE_URL ? databaseConnection(config.DATABASE_URL, config) : undefined;
  if (!connection) {
    embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR });
    connection = { url: embedded.url };
  }
  const db = createDb({ ...connection, poolMax: 2, applicationName: 'svcctl' });
  const logger = createLogger({ name: 'svcctl', level: config.LOG_LEVEL, destination: process.stderr });
  let opened: Promise<{ bus: Bus; topics: ReturnType<typeof prefixedTopics> }> | undefined;
  try {
    // Every command first brings the schema up to date, so the CLI works on a fresh database.
    await runMigrations(db, allMigrations);
    const result = await command.run(values, {
      db,
      migrations: allMigrations,
      connectorSecretKey: () => resolveSecretKey(config.CONNECTOR_SECRET_KEY, config.DATA_DIR),
      rawLogMasterKeys: () => masterKeyRing(config, config.DATA_DIR),
      identifierHashes: () => checkedIdentifierHashes(db, config, config.DATA_DIR),
      bus: () =>
        (opened ??= createBus(config, { db, logger }).then((bus) => ({ bus, topics: prefixedTopics(config.TOPIC_PREFIX) }))),
      logger,
      defaultPhoneCountryCode: String(config.PHONE_DEFAULT_COUNTRY_CODE),
    });
    process.stdout.write(`${JSON.stringify(snakeCaseKeys(result))}\n`);
    return 0;
  } finally {
    await (await opened?.catch(() => undefined))?.bus.close();
    await db.destroy();
    await embedded?.stop();
  }
}

function fail(err: unknown): number {
  const usage = err instanceof UsageError;
  const known = usage || err instanceof AppError || err instanceof ConnectionCheckError || err instanceof IdentifierHashKeysError || (err as Error)?.name === 'ConfigError';
  const message = known ? (err as Error).message : `unexpected failure: ${(err as Error)?.message ?? String(err)}`;
  const problems = err instanceof InvalidInputError ? { problems: err.problems } : {};
  process.stderr.write(`${JSON.stringify({ error: message, ...problems })}\n`);
  return usage ? 2 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => process.exit(fail(err)),
);
