import type { Bus, prefixedTopics } from '@svc/bus';
import type { IdentifierHashes, MasterKeyRing } from '@svc/identity';
import { ValidationError, type Db, type Logger, type MigrationSet } from '@svc/runtime';

type Topics = ReturnType<typeof prefixedTopics>;

/** What a command needs; built once by main.ts (or by a test). */
export interface CliContext {
  db: Db;
  migrations: readonly MigrationSet[];
  /** The key that seals connector secrets (CONNECTOR_SECRET_KEY, or the one in DATA_DIR). */
  connectorSecretKey(): Promise<Buffer>;
  /** The raw log's master keys (RAW_LOG_MASTER_KEY and the retired ones, or the one in DATA_DIR). */
  rawLogMasterKeys(): Promise<MasterKeyRing>;
  /** How identifiers are hashed (IDENTIFIER_HASH_KEYS, or the key in DATA_DIR). */
  identifierHashes(): Promise<IdentifierHashes>;
  /** The log (Kafka with KAFKA_BROKERS, else the Postgres-backed log), opened on first use and closed on exit. */
  bus(): Promise<{ bus: Bus; topics: Topics }>;
  logger: Logger;
  /** PHONE_DEFAULT_COUNTRY_CODE, as the resolver reads it. */
  defaultPhoneCountryCode: string;
}

/** A part of a result printed exactly as it is (a stored payload), not snake_cased like the rest. */
export class Verbatim {
  constructor(readonly value: unknown) {}
  toJSON(): unknown {
    return this.value;
  }
}

/** Wrong words on the command line: exit code 2, nothing written. */
export class UsageError extends Error {}

export type Values = Record<string, string | undefined>;

/** One `svcctl <words>` command. Its result is printed as snake_case JSON. */
export interface Command {
  usage: string;
  /** What it does, in a line: for `--help`. */
  summary: string;
  /** Flags the command accepts (all take a value). */
  flags: { required?: readonly string[]; optional?: readonly string[] };
  run(values: Values, ctx: CliContext): Promise<object>;
}

export function integer(flag: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min) {
    throw new ValidationError(`--${flag} must be an integer of at least ${min} (got ${JSON.stringify(raw)})`);
  }
  return n;
}

export function oneOf(flag: string, raw: string, allowed: readonly string[]): string {
  if (!allowed.includes(raw)) {
    throw new ValidationError(`--${flag} must be one of ${allowed.join(', ')} (got ${JSON.stringify(raw)})`);
  }
  return raw;
}

export const list = (raw: string | undefined): string[] =>
  (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);


/** Input with several problems: exit code 1, and `{"error", "problems": [...]}` on stderr, nothing written. */
export class InvalidInputError extends ValidationError {
  constructor(
    message: string,
    readonly problems: readonly string[],
  ) {
    super(message);
  }
}
