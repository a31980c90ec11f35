import type { Db } from './db';
import type { MigrationSet } from './migrations';

/**
 * The migrations of `sets` the database has not applied yet, as
 * `schema/name`, in the order they would run; empty when the schema is
 * current. Reads only: a deployed service asks this before it starts, and
 * leaves applying them to the `migrate` job. A database that has applied
 * more (a newer release migrated it) counts as current.
 */
export async function pendingMigrations(db: Db, sets: readonly MigrationSet[]): Promise<string[]> {
  const pending: string[] = [];
  for (const set of sets) {
    const applied = await appliedMigrations(db, set.schema);
    const names = set.migrations.map((m) => m.name).sort((a, b) => a.localeCompare(b));
    pending.push(...names.filter((name) => !applied.has(name)).map((name) => `${set.schema}/${name}`));
  }
  return pending;
}

/** Names recorded in the schema's knex_migrations table; none when the schema or table does not exist yet. */
async function appliedMigrations(db: Db, schema: string): Promise<Set<string>> {
  const { rows } = await db.raw<{ rows: Array<{ present: boolean }> }>(
    `select exists (select 1 from information_schema.tables where table_schema = ? and table_name = 'knex_migrations') as present`,
    [schema],
  );
  if (!rows[0]?.present) return new Set();
  const recorded = await db.withSchema(schema).select<Array<{ name: string }>>('name').from('knex_migrations');
  return new Set(recorded.map((row) => row.name));
}
