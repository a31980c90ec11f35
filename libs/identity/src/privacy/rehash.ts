import type { Db } from '@svc/runtime';
import type { IdentifierHashes } from './hash';

/**
 * Brings every stored identifier hash under the newest key of
 * IDENTIFIER_HASH_KEYS, without the values (IdentifierHashes.rewrap): the
 * migration from the unkeyed SHA-256 rows of earlier versions, and the
 * second half of every rotation. Until a row is brought over, look-ups find
 * it in its previous form, so nothing is missed meanwhile.
 *
 * Each table is walked once in key order, a page per transaction (rows
 * another transaction holds are left for the next pass): suppressions,
 * erasure requests' targets, the raw log's subject keys, and the hashes in
 * the audit log's details (the append-only trigger lets exactly this change
 * through, in a transaction that declares it; migration 0004). The identity
 * resolver runs a pass when it starts and every hour; `svcctl hashes
 * rewrap` runs one at once, `svcctl hashes status` counts what is left.
 */

export interface RehashCounts {
  suppressions: number;
  erasure_requests: number;
  subject_keys: number;
  audit_log: number;
  /** Subject keys whose newer form exists already (two keys for one visitor, made across a rotation): left as they are; an erasure deletes both. */
  subject_key_conflicts: number;
}

const PAGE = 500;

/**
 * Refuses a list of IDENTIFIER_HASH_KEYS that is not the one the database's
 * hashes are made with: a process on another key would find no suppression,
 * no erasure target and no visitor's raw-log key (it would make a second
 * one, which an erasure then misses), and say nothing. Records the list's
 * key ids, one per layer, the first time each layer is seen (the first
 * start, and each rotation); a process with fewer keys (one not yet
 * restarted during a rotation) is checked on those it has. Called by every
 * service at start and by svcctl.
 */
export async function checkIdentifierHashKeys(db: Db, hashes: IdentifierHashes): Promise<void> {
  const ids = hashes.keyIds();
  await db.raw(`insert into privacy.identifier_hash_keys (layer, key_id) select * from unnest(?::int[], ?::text[]) on conflict do nothing`, [ids.map((_, i) => i + 1), ids]);
  const recorded = (await db('privacy.identifier_hash_keys').orderBy('layer').select('layer', 'key_id')) as Array<{ layer: number; key_id: string }>;
  for (const { layer, key_id: recordedId } of recorded) {
    if (layer <= ids.length && ids[layer - 1] !== recordedId) {
      throw new IdentifierHashKeysError(
        `IDENTIFIER_HASH_KEYS: key ${layer} (id ${ids[layer - 1]}) is not the key this database's identifier hashes are made with (id ${recordedId}); ` +
          'every service and svcctl need the same list, oldest first, and a key is never removed',
      );
    }
  }
}

export class IdentifierHashKeysError extends Error {}

/** SQL: how many keyed layers a stored hash column has (0 for an unkeyed one). */
const layersOf = (column: string) => `coalesce(substring(${column} from '^k([0-9]+)\\.')::int, 0)`;

export async function rehashStoredIdentifiers(db: Db, hashes: IdentifierHashes): Promise<RehashCounts> {
  const counts: RehashCounts = { suppressions: 0, erasure_requests: 0, subject_keys: 0, audit_log: 0, subject_key_conflicts: 0 };
  const n = hashes.layers;

  // Suppressions: two old forms of one value (a row left by an older process) become one row, in force if either was.
  await byPages(db, ['00000000-0000-0000-0000-000000000000', '', ''], async (trx, after) => {
    const { rows } = (await trx.raw(
      `select org_id, identifier_type, identifier_hash, erasure_id, suppressed_at, lifted_at from privacy.suppressions
       where (org_id, identifier_type, identifier_hash) > (?::uuid, ?, ?) and ${layersOf('identifier_hash')} < ?
       order by org_id, identifier_type, identifier_hash limit ${PAGE} for update skip locked`,
      [...after, n],
    )) as { rows: Array<{ org_id: string; identifier_type: string; identifier_hash: string; erasure_id: string | null; suppressed_at: Date; lifted_at: Date | null }> };
    const moved = rows.flatMap((r) => {
      const next = hashes.rewrap(r.identifier_hash);
      return next === undefined ? [] : [{ ...r, next }];
    });
    if (moved.length > 0) {
      await trx.raw(
        `delete from privacy.suppressions s using unnest(?::uuid[], ?::text[], ?::text[]) as x (o, t, h)
         where s.org_id = x.o and s.identifier_type = x.t and s.identifier_hash = x.h`,
        [moved.map((m) => m.org_id), moved.map((m) => m.identifier_type), moved.map((m) => m.identifier_hash)],
      );
      const merged = new Map<string, (typeof moved)[number]>();
      for (const m of moved) {
        const key = `${m.org_id}\u0000${m.identifier_type}\u0000${m.next}`;
        const seen = merged.get(key);
        merged.set(key, seen ? { ...seen, lifted_at: seen.lifted_at && m.lifted_at ? new Date(Math.max(+seen.lifted_at, +m.lifted_at)) : null } : m);
      }
      await trx.raw(
        `insert into privacy.suppressions (org_id, identifier_type, identifier_hash, erasure_id, suppressed_at, lifted_at)
         select org_id, identifier_type, identifier_hash, erasure_id, suppressed_at, lifted_at
         from jsonb_to_recordset(?::jsonb) as x (org_id uuid, identifier_type text, identifier_hash text, erasure_id uuid, suppressed_at timestamptz, lifted_at timestamptz)
         on conflict (org_id, identifier_type, identifier_hash) do update
           set lifted_at = case when excluded.lifted_at is null or privacy.suppressions.lifted_at is null then null
                                else greatest(excluded.lifted_at, privacy.suppressions.lifted_at) end`,
        [JSON.stringify([...merged.values()].map((m) => ({ ...m, identifier_hash: m.next })))],
      );
    }
    counts.suppressions += moved.length;
    const last = rows.at(-1);
    return last && ([last.org_id, last.identifier_type, last.identifier_hash] as [string, string, string]);
  });

  counts.erasure_requests = await rewriteById(db, {
    table: 'privacy.erasure_requests',
    id: 'uuid',
    column: 'target_hash',
    type: 'text',
    needs: `target_hash is not null and ${layersOf('target_hash')} < ${n}`,
    rewrite: (hash: string) => hashes.rewrap(hash),
  });

  await byPages(db, ['00000000-0000-0000-0000-000000000000', ''], async (trx, after) => {
    const { rows } = (await trx.raw(
      `select org_id, subject_hash from privacy.subject_keys
       where (org_id, subject_hash) > (?::uuid, ?) and ${layersOf('subject_hash')} < ?
       order by org_id, subject_hash limit ${PAGE} for update skip locked`,
      [...after, n],
    )) as { rows: Array<{ org_id: string; subject_hash: string }> };
    const moved = rows.flatMap((r) => {
      const next = hashes.rewrap(r.subject_hash);
      return next === undefined ? [] : [{ ...r, next }];
    });
    if (moved.length > 0) {
      const updated = (await trx.raw(
        `update privacy.subject_keys s set subject_hash = x.n from unnest(?::uuid[], ?::text[], ?::text[]) as x (o, h, n)
         where s.org_id = x.o and s.subject_hash = x.h
           and not exists (select 1 from privacy.subject_keys t where t.org_id = x.o and t.subject_hash = x.n)`,
        [moved.map((m) => m.org_id), moved.map((m) => m.subject_hash), moved.map((m) => m.next)],
      )) as { rowCount: number };
      counts.subject_keys += updated.rowCount;
      counts.subject_key_conflicts += moved.length - updated.rowCount;
    }
    const last = rows.at(-1);
    return last && ([last.org_id, last.subject_hash] as [string, string]);
  });

  counts.audit_log = await rewriteById(db, {
    table: 'privacy.audit_log',
    id: 'bigint',
    column: 'details',
    type: 'jsonb',
    needs: AUDIT_HAS_HASH,
    // The audit trigger lets this transaction change identifier hashes in details, and nothing else.
    declare: `select set_config('svc.rehash_audit', 'on', true)`,
    rewrite: (details: unknown) => {
      const next = rewrapDetails(details, hashes);
      return next === undefined ? undefined : JSON.stringify(next);
    },
  });
  return counts;
}

/** SQL: an audit row whose details name an identifier hash somewhere. */
const AUDIT_HAS_HASH = `details::text like '%"identifier_hash"%'`;

/**
 * Rewrites one column of a table keyed by `id`, a page per transaction
 * (byPages), on the rows that `needs` (SQL) selects; `rewrite` gives a
 * row's new value, or undefined to leave it. Returns how many changed.
 */
async function rewriteById<V>(
  db: Db,
  o: { table: string; id: 'uuid' | 'bigint'; column: string; type: 'text' | 'jsonb'; needs: string; declare?: string; rewrite: (value: V) => string | undefined },
): Promise<number> {
  let changed = 0;
  await byPages(db, o.id === 'uuid' ? '00000000-0000-0000-0000-000000000000' : '0', async (trx, after) => {
    if (o.declare) await trx.raw(o.declare);
    const { rows } = (await trx.raw(
      `select id, ${o.column} as value from ${o.table} where id > ?::${o.id} and ${o.needs} order by id limit ${PAGE} for update skip locked`,
      [after],
    )) as { rows: Array<{ id: string; value: V }> };
    const moved = rows.flatMap((r) => {
      const next = o.rewrite(r.value);
      return next === undefined ? [] : [{ id: r.id, next }];
    });
    if (moved.length > 0) {
      await trx.raw(`update ${o.table} t set ${o.column} = x.v from unnest(?::${o.id}[], ?::${o.type}[]) as x (id, v) where t.id = x.id`, [
        moved.map((m) => m.id),
        moved.map((m) => m.next),
      ]);
    }
    changed += moved.length;
    return rows.at(-1)?.id;
  });
  return changed;
}

/**
 * Walks a table a page per transaction: `page` handles the rows after the
 * cursor `after` and returns the last one's cursor, or undefined once none
 * is left. Rows another transaction holds are skipped (left for the next
 * pass), so a pass never waits on the live path.
 */
async function byPages<C>(db: Db, first: C, page: (trx: Db, after: C) => Promise<C | undefined>): Promise<void> {
  for (let after: C | undefined = first; after !== undefined; ) {
    const from: C = after;
    after = await db.transaction((trx) => page(trx, from));
  }
}

/** An audit row's details with every `identifier_hash` brought under the newest key; undefined when none changes. */
function rewrapDetails(details: unknown, hashes: IdentifierHashes): unknown {
  let changed = false;
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const next = k === 'identifier_hash' && typeof v === 'string' ? hashes.rewrap(v) : undefined;
      if (next !== undefined && next !== v) changed = true;
      out[k] = next ?? walk(v);
    }
    return out;
  };
  const out = walk(details);
  return changed ? out : undefined;
}

/** How many stored hashes each table holds under fewer keys than `hashes` (what a rewrap pass has left). */
export async function identifierHashesLeft(db: Db, hashes: IdentifierHashes): Promise<Record<'suppressions' | 'erasure_requests' | 'subject_keys' | 'audit_log', number>> {
  const n = hashes.layers;
  const count = async (sql: string, bindings: Array<string | number>) => Number(((await db.raw(sql, bindings)) as { rows: Array<{ n: string }> }).rows[0]!.n);
  return {
    suppressions: await count(`select count(*) as n from privacy.suppressions where ${layersOf('identifier_hash')} < ?`, [n]),
    erasure_requests: await count(`select count(*) as n from privacy.erasure_requests where target_hash is not null and ${layersOf('target_hash')} < ?`, [n]),
    subject_keys: await count(`select count(*) as n from privacy.subject_keys where ${layersOf('subject_hash')} < ?`, [n]),
    // Hashes of the stored form (parseStoredHash) anywhere in the details, under fewer layers.
    audit_log: await count(
      `select count(*) as n from privacy.audit_log a where ${AUDIT_HAS_HASH} and exists (
         select 1 from jsonb_path_query(a.details, 'strict $.**.identifier_hash') as h (v)
         where jsonb_typeof(h.v) = 'string' and h.v #>> '{}' ~ '^(k[1-9][0-9]{0,2}[.]){0,1}[0-9a-f]{64}$' and ${layersOf(`(h.v #>> '{}')`)} < ?)`,
      [n],
    ),
  };
}
