import type { Knex } from 'knex';
import type { Db } from './db';

/** One forward-only migration. Names sort in the order they must run. */
export interface Migration {
  name: string;
  up(db: Knex): Promise<void>;
}

/** A migration that is one SQL script (what nearly every migration is). */
export function sqlMigration(name: string, sql: string): Migration {
  return {
    name,
    async up(db) {
      await db.raw(sql);
    },
  };
}

/** The migrations of one service, applied to the Postgres schema it owns. */
export interface MigrationSet {
  schema: string;
  migrations: readonly Migration[];
}

/**
 * Applies every pending migration of each set, in order. Each schema keeps its
 * own knex_migrations table, so services evolve their tables independently.
 * Concurrent callers (several services starting at once) serialise on an
 * advisory lock rather than failing on knex's lock table.
 */
export async function runMigrations(db: Db, sets: readonly MigrationSet[]): Promise<string[]> {
  const applied: string[] = [];
  const conn = await db.client.acquireConnection();
  try {
    await db.raw('select pg_advisory_lock(hashtext(?))', ['svc:migrations']).connection(conn);
    for (const set of sets) {
      await db.raw('create schema if not exists ??', [set.schema]).connection(conn);
      const source: Knex.MigrationSource<Migration> = {
        getMigrations: async () => [...set.migrations].sort((a, b) => a.name.localeCompare(b.name)),
        getMigrationName: (m) => m.name,
        getMigration: async (m) => ({ up: m.up, down: async () => {} }),
      };
      const [, names] = (await db.migrate.latest({
        migrationSource: source,
        schemaName: set.schema,
        tableName: 'knex_migrations',
        disableMigrationsListValidation: true,
      })) as [number, string[]];
      applied.push(...names.map((n) => `${set.schema}/${n}`));
    }
  } finally {
    await db.raw('select pg_advisory_unlock(hashtext(?))', ['svc:migrations']).connection(conn);
    await db.client.releaseConnection(conn);
  }
  return applied;
}
