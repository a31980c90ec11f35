import knex, { type Knex } from 'knex';
import pg from 'pg';

// Postgres `bigint` (int8) and `numeric` come back as strings by default; every
// int8 this product stores (counts, offsets) fits comfortably in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Knex;

/** A `select` that returns a row while something holds, with its `?` bindings: to run inside another statement. */
export interface SqlCondition {
  sql: string;
  bindings: readonly string[];
}

export interface DbOptions {
  url: string;
  /** Maximum pool connections. */
  poolMax?: number;
  /** Shows up in pg_stat_activity, so an operator can tell the services apart. */
  applicationName?: string;
}

/** A knex instance on the pg driver. The caller owns it and must `destroy()` it. */
export function createDb({ url, poolMax = 10, applicationName = 'svc' }: DbOptions): Db {
  return knex({
    client: 'pg',
    connection: { connectionString: url, application_name: applicationName },
    pool: { min: 0, max: poolMax, idleTimeoutMillis: 30_000 },
    acquireConnectionTimeout: 10_000,
  });
}

/** True when the database answers a trivial query; for readiness checks. */
export async function pingDb(db: Db): Promise<boolean> {
  try {
    await db.raw('select 1');
    return true;
  } catch {
    return false;
  }
}
