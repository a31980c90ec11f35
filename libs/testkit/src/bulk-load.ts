import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Db } from '@svc/runtime';

/**
 * A bench's bulk load, as an operator's would be: the identity tables' read
 * indexes and the events' keys are dropped, `load` runs, and they are built
 * again (one sorted build each, and the keys checked once, in bulk, instead of
 * a random index page per row), then the tables are vacuumed until the
 * visibility map covers them, as on a server whose autovacuum has caught up,
 * and analysed, and everything written is flushed to disk. Shared by the
 * Profiles API bench and the pipeline's scale curve; `log` gets a line per
 * step with its seconds.
 */
export async function bulkLoadIdentity(db: Db, load: () => Promise<void>, log: (line: string) => void): Promise<void> {
  const step = async (what: string, run: () => Promise<unknown>) => {
    const t = Date.now();
    await run();
    log(`  ${what}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
  };
  const { rows: indexes } = (await db.raw(
    `select indexname, indexdef from pg_indexes i
     where schemaname = 'identity' and tablename in ('events', 'profiles', 'identity_signals')
       and not exists (select 1 from pg_constraint c where c.conname = i.indexname)`,
  )) as { rows: Array<{ indexname: string; indexdef: string }> };
  for (const i of indexes) await db.raw(`drop index identity.${i.indexname}`);
  // Keys before foreign keys when they come back (and the reverse to drop them).
  const { rows: constraints } = (await db.raw(
    `select conname, pg_get_constraintdef(oid) as def from pg_constraint
     where conrelid = 'identity.events'::regclass and contype in ('p', 'u', 'f') order by contype desc`,
  )) as { rows: Array<{ conname: string; def: string }> };
  for (const c of [...constraints].reverse()) await db.raw(`alter table identity.events drop constraint ${c.conname}`);

  await load();

  for (const c of constraints) await step(`constraint ${c.conname}`, () => db.raw(`alter table identity.events add constraint ${c.conname} ${c.def}`));
  for (const i of indexes) await step(`index ${i.indexname}`, () => db.raw(i.indexdef));
  // An analyze running meanwhile can hold the vacuum horizon back: vacuum until the map covers the tables.
  for (let round = 1; round <= 3; round++) {
    await step(`vacuum analyze (round ${round})`, () =>
      db.raw('vacuum (analyze) identity.profiles, identity.canonical_ids, identity.events, identity.identity_signals, identity.fingerprints, identity.click_ids'),
    );
    const { rows } = (await db.raw(
      `select coalesce(min(relallvisible::float / greatest(relpages, 1)), 1) as covered from pg_class
       where oid in ('identity.profiles'::regclass, 'identity.events'::regclass, 'identity.identity_signals'::regclass)`,
    )) as { rows: Array<{ covered: number }> };
    if ((rows[0]?.covered ?? 1) >= 0.99) break;
  }
  // The load's dirty pages written out now rather than in the middle of a measurement (superuser only: best effort),
  // and the operating system's too: gigabytes written back in the background slow every read meanwhile.
  await step('checkpoint', () => db.raw('checkpoint')).catch(() => log('  checkpoint not allowed for this user; skipped'));
  await step('sync', () => promisify(execFile)('sync'));
}
