import { hash } from 'node:crypto';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import { sslForClient, type DatabaseConnection } from './connection';

// Postgres `bigint` (int8) and `numeric` come back as strings by default; every
// int8 this product stores (counts, offsets) fits comfortably in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Knex;

/** A `select` that returns a row while something holds, with its `?` bindings: to run inside another statement. */
export interface SqlCondition {
  sql: string;
  bindings: readonly string[];
}

export interface DbOptions extends DatabaseConnection {
  /** Maximum pool connections. */
  poolMax?: number;
  /** Shows up in pg_stat_activity, so an operator can tell the services apart. */
  applicationName?: string;
}

/** A knex instance on the pg driver. The caller owns it and must `destroy()` it. */
export function createDb({ url, ssl, poolMax = 10, applicationName = 'svc' }: DbOptions): Db {
  return knex({
    client: 'pg',
    // The Postgres-backed log opens sessions of its own from this same object (its `sessionConfig`).
    connection: { connectionString: url, ...(ssl === undefined ? {} : { ssl: sslForClient(ssl) }), application_name: applicationName },
    pool: { min: 0, max: poolMax, idleTimeoutMillis: 30_000 },
    acquireConnectionTimeout: 10_000,
  });
}

const statementNames = new Map<string, string>();

/**
 * `db.raw(sql, bindings)` as a named prepared statement: each pooled
 * connection has the server parse it once, and the server keeps its plan
 * (after five runs, a generic plan when that is estimated to cost no more than
 * the custom ones), where a plain `raw` is parsed and planned on every call.
 * For the statements run many times a second: at 5,000 events/s planning was
 * a fifth of PostgreSQL's CPU, and the rate-limit statement took longer to
 * plan than to run. The name is derived from `sql`, so `sql` must be the same
 * text on every call (its bindings are values, never SQL), and a statement
 * must name the columns it returns (a plan kept across a migration that
 * changed what `*` means fails).
 */
export function preparedRaw<T = unknown>(db: Db, sql: string, bindings: readonly Knex.RawBinding[] | Knex.ValueDict): Knex.Raw<T> {
  let name = statementNames.get(sql);
  if (name === undefined) {
    // A statement name is at most 63 bytes; 96 bits of a hash tell a few hundred statements apart.
    name = `svc_${hash('sha256', sql, 'hex').slice(0, 24)}`;
    statementNames.set(sql, name);
  }
  return db.raw<T>(sql, bindings as Knex.RawBinding[]).options({ name });
}

/**
 * SQL giving a timestamptz column as the ISO 8601 text the interface answers
 * with (`2026-11-28T09:30:00.000Z`, UTC), to milliseconds or, `precision`
 * 'US', microseconds: formatted by PostgreSQL, so the row needs no Date.
 */
export const isoTimestampSql = (column: string, precision: 'MS' | 'US' = 'MS'): string =>
  `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.${precision}"Z"')`;

/** True when the database answers a trivial query; for readiness checks. */
export async function pingDb(db: Db): Promise<boolean> {
  try {
    await db.raw('select 1');
    return true;
  } catch {
    return false;
  }
}
