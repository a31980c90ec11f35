import { hash } from 'node:crypto';
import { SealedBlobError, isDatabaseUnavailable, openBytes, pooledRandomBytes, preparedRaw, sealBytes, timeOrderedUuid, type Db } from '@svc/runtime';
import type { IdentifierHashes } from './hash';

/**
 * The keys that seal the raw log (crypto-shredding). Every event the gateway
 * writes to events.raw is sealed under the data key of its anonymous id
 * (every event has one, and the resolver stitches every anonymous id a
 * person used to their profile); erasing the person deletes those keys, and
 * every copy of their events, in the topic, in the Postgres-backed log and
 * in any backup of either, stops opening.
 *
 * privacy.subject_keys holds one row per (organisation, anonymous id): the
 * anonymous id only as its suppression hash, the data key only wrapped
 * (AES-256-GCM, runtime's sealBytes) under the master key from the
 * configuration (RAW_LOG_MASTER_KEY), with the organisation and key id as
 * associated data. A database copy alone opens nothing; the master key alone
 * opens nothing once the rows are gone.
 *
 * Rotation: each row names the master key that wrapped it (its id, a hash
 * of the key). The processes hold the current key and any retired ones
 * (RAW_LOG_MASTER_KEYS_RETIRED); `svcctl keys rewrap` wraps every row again
 * under the current key, after which the retired ones can go.
 */

/** A master key and the id rows name it by (16 hex digits of a hash of the key: says which, tells nothing). */
export interface MasterKey {
  id: string;
  key: Buffer;
}

/** The master keys a process holds: the current one wraps, any of them unwraps. */
export class MasterKeyRing {
  readonly current: MasterKey;
  private readonly byId = new Map<string, Buffer>();

  constructor(current: Buffer, retired: readonly Buffer[] = []) {
    this.current = masterKey(current);
    for (const m of [this.current, ...retired.map(masterKey)]) this.byId.set(m.id, m.key);
  }

  key(id: string): Buffer | undefined {
    return this.byId.get(id);
  }
}

export function masterKey(key: Buffer): MasterKey {
  return { id: hash('sha256', Buffer.concat([Buffer.from('svc raw-log master key\u0000'), key]), 'hex').slice(0, 16), key };
}

/** A data key as the sealing side uses it. */
export interface DataKey {
  id: string;
  key: Buffer;
}

const wrapAssociated = (orgId: string, keyId: string): string => `${orgId}\u0000${keyId}`;

export function wrapDataKey(master: MasterKey, orgId: string, keyId: string, key: Buffer): Buffer {
  return sealBytes(master.key, wrapAssociated(orgId, keyId), key);
}

interface KeyRow {
  key_id: string;
  org_id: string;
  wrapped_key: Buffer;
  master_key_id: string;
}

/**
 * A data key that exists but cannot be unwrapped: the process lacks its
 * master key (a configuration fault) or the row was tampered with. Never
 * taken for an erased key, and never any event's fault: the resolver retries
 * (classifyFailure: unavailable) and a replay stops.
 */
export class RawLogKeyError extends Error {
  override name = 'RawLogKeyError';
}

export class MasterKeyMissingError extends RawLogKeyError {
  constructor(readonly masterKeyId: string) {
    super(`a raw-log data key is wrapped under master key ${masterKeyId}, which this process does not hold (RAW_LOG_MASTER_KEY, RAW_LOG_MASTER_KEYS_RETIRED)`);
  }
}

/** The data key of a row; a RawLogKeyError when its master key is not held or the row does not open (tampered, or moved). */
function unwrap(ring: MasterKeyRing, row: KeyRow): Buffer {
  const master = ring.key(row.master_key_id);
  if (!master) throw new MasterKeyMissingError(row.master_key_id);
  try {
    return openBytes(master, wrapAssociated(row.org_id, row.key_id), row.wrapped_key);
  } catch (err) {
    if (err instanceof SealedBlobError) throw new RawLogKeyError(`raw-log keys: key ${row.key_id} does not open under master key ${row.master_key_id} (tampered, or another deployment's)`);
    throw err;
  }
}

/**
 * How long a process uses a key it read without reading it again. A gateway
 * that held a key an erasure deleted may seal the subject's events under it
 * for this long after the erasure; the resolver drops them as erased (they
 * carry a suppressed anonymous id, and would be dropped anyway). An
 * unsuppress within this time of the erasure therefore takes effect for that
 * device only once the hold ran out.
 */
export const SUBJECT_KEY_HOLD_MS = 5 * 60_000;

export interface SubjectKeyOptions {
  /** Keys held at most (the oldest goes first). Default 100,000. */
  maxKeys?: number;
  now?: () => number;
}

/** How a key is held: by its organisation and the anonymous id (gateway) or key id (resolver). */
const heldKey = (orgId: string, id: string): string => `${orgId}\u0000${id}`;

/**
 * What both sides share: the table, the master keys, and the keys this
 * process holds, each with when it was read (the oldest goes first beyond
 * `maxKeys`).
 */
abstract class HeldKeyTable<K> {
  private readonly held = new Map<string, { key: K; readAt: number }>();
  private readonly maxKeys: number;
  protected readonly now: () => number;

  constructor(
    protected readonly db: Db,
    protected readonly ring: MasterKeyRing,
    options: SubjectKeyOptions = {},
  ) {
    this.maxKeys = options.maxKeys ?? 100_000;
    this.now = options.now ?? Date.now;
  }

  /** The held key and whether it was read within SUBJECT_KEY_HOLD_MS of `now`. */
  protected heldFor(name: string, now: number): { key: K; fresh: boolean } | undefined {
    const held = this.held.get(name);
    return held && { key: held.key, fresh: now - held.readAt <= SUBJECT_KEY_HOLD_MS };
  }

  protected hold(name: string, key: K, readAt: number): void {
    this.held.delete(name);
    // A map iterates in insertion order.
    if (this.held.size >= this.maxKeys) this.held.delete(this.held.keys().next().value!);
    this.held.set(name, { key, readAt });
  }
}

/**
 * The gateway's side: the data key of each anonymous id of a request, made
 * on first use. Held per process for SUBJECT_KEY_HOLD_MS, then read again
 * (an erasure may have deleted it: the next event gets a new key). While
 * the database cannot be reached, held keys keep serving; a subject with no
 * held key cannot be sealed, and the caller refuses its events (503) rather
 * than write what could never be opened.
 */
export class SubjectKeys extends HeldKeyTable<DataKey> {
  constructor(
    db: Db,
    ring: MasterKeyRing,
    private readonly hashes: IdentifierHashes,
    options: SubjectKeyOptions = {},
  ) {
    super(db, ring, options);
  }

  /** The data key of every anonymous id given, by anonymous id. Throws when the database fails and a key is not held. */
  async forSubjects(orgId: string, anonymousIds: readonly string[]): Promise<Map<string, DataKey>> {
    const out = new Map<string, DataKey>();
    const stale: string[] = [];
    const now = this.now();
    for (const anonymousId of anonymousIds) {
      if (out.has(anonymousId)) continue;
      const held = this.heldFor(heldKey(orgId, anonymousId), now);
      if (held) out.set(anonymousId, held.key);
      if (!held?.fresh) stale.push(anonymousId);
    }
    if (stale.length === 0) return out;
    let read: Map<string, DataKey>;
    try {
      read = await this.readOrMakeRetried(orgId, stale);
    } catch (err) {
      // Through an outage, held keys serve: the log is the gateway's only hard dependency.
      if (isDatabaseUnavailable(err) && stale.every((a) => out.has(a))) return out;
      throw err;
    }
    for (const [anonymousId, key] of read) {
      out.set(anonymousId, key);
      this.hold(heldKey(orgId, anonymousId), key, now);
    }
    return out;
  }

  /** readOrMake, again on a deadlock or serialization failure (the insert's hash order should rule a deadlock out; a client never pays for one). */
  private async readOrMakeRetried(orgId: string, anonymousIds: readonly string[]): Promise<Map<string, DataKey>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.readOrMake(orgId, anonymousIds);
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (attempt >= 3 || (code !== '40P01' && code !== '40001')) throw err;
      }
    }
  }

  private async readOrMake(orgId: string, anonymousIds: readonly string[]): Promise<Map<string, DataKey>> {
    // In hash order, as every process inserts: two requests meeting the same new visitors cannot deadlock.
    const subjects = [...new Set(anonymousIds)]
      .map((a) => {
        const [hash, previous] = this.hashes.lookups(orgId, 'anonymous_id', a);
        // Time-ordered: key_id's unique index then grows at its edge (it tells when the visitor was first
        // seen, which the log's receive times tell anyway).
        return { anonymousId: a, hash, previous, keyId: timeOrderedUuid(), key: pooledRandomBytes(32) };
      })
      .sort((x, y) => (x.hash < y.hash ? -1 : x.hash > y.hash ? 1 : 0));
    const wrapped = subjects.map((s) => wrapDataKey(this.ring.current, orgId, s.keyId, s.key).toString('hex'));
    const named = [...subjects.map((s) => s.hash), ...subjects.map((s) => s.previous)];
    // One statement: rows that exist (as of its snapshot, in either form of the hash: rows not yet
    // rewrapped under the newest hash key keep the previous one) and rows it made. A row another
    // process made after the snapshot is neither; the plain read after it finds those.
    let { rows } = await preparedRaw<{ rows: Array<KeyRow & { subject_hash: string }> }>(
      this.db,
      `with made as (
         insert into privacy.subject_keys (org_id, subject_hash, key_id, wrapped_key, master_key_id)
         select ?, h, k, decode(w, 'hex'), ? from unnest(?::text[], ?::text[], ?::uuid[], ?::text[]) with ordinality as x (h, p, k, w, n)
         where not exists (select 1 from privacy.subject_keys s where s.org_id = ? and s.subject_hash = x.p)
         -- In the hash order given, whatever join the planner picks for the look-up: that order is what keeps two
         -- requests meeting the same new visitors from deadlocking.
         order by x.n
         on conflict (org_id, subject_hash) do nothing
         returning subject_hash, key_id, org_id, wrapped_key, master_key_id
       )
       select subject_hash, key_id, org_id, wrapped_key, master_key_id from made
       union all
       select subject_hash, key_id, org_id, wrapped_key, master_key_id from privacy.subject_keys
       where org_id = ? and subject_hash = any(?::text[])`,
      [orgId, this.ring.current.id, subjects.map((s) => s.hash), subjects.map((s) => s.previous), subjects.map((s) => s.keyId), wrapped, orgId, orgId, named],
    );
    const found = new Set(rows.map((r) => r.subject_hash));
    const missing = subjects.filter((s) => !found.has(s.hash) && !found.has(s.previous)).flatMap((s) => [s.hash, s.previous]);
    if (missing.length > 0) {
      const again = await preparedRaw<{ rows: Array<KeyRow & { subject_hash: string }> }>(
        this.db,
        'select subject_hash, key_id, org_id, wrapped_key, master_key_id from privacy.subject_keys where org_id = ? and subject_hash = any(?::text[])',
        [orgId, missing],
      );
      rows = [...rows, ...again.rows];
    }
    const byHash = new Map(rows.map((r) => [r.subject_hash, r]));
    const out = new Map<string, DataKey>();
    for (const s of subjects) {
      const row = byHash.get(s.hash) ?? byHash.get(s.previous);
      if (!row) throw new Error('raw-log keys: a subject key was neither found nor made');
      // The row this statement made carries the key in hand; one that existed is unwrapped.
      out.set(s.anonymousId, row.key_id === s.keyId ? { id: s.keyId, key: s.key } : { id: row.key_id, key: unwrap(this.ring, row) });
    }
    return out;
  }
}

/**
 * The resolver's and the replay's side: data keys by key id, for opening.
 * A key id with no row was erased (or never existed): absent from the
 * answer, and its events are dropped as erased. Held for
 * SUBJECT_KEY_HOLD_MS; an erasure's events are suppressed by then anyway.
 */
export class DataKeyReader extends HeldKeyTable<Buffer> {
  /** The keys of `keyIds` that exist, each checked to be `orgId`'s (the wrapping binds the organisation). */
  async read(wanted: ReadonlyArray<{ orgId: string; keyId: string }>): Promise<Map<string, Buffer>> {
    const out = new Map<string, Buffer>();
    const now = this.now();
    const ask = new Set<string>();
    for (const { orgId, keyId } of wanted) {
      const held = this.heldFor(heldKey(orgId, keyId), now);
      if (held?.fresh) out.set(keyId, held.key);
      else ask.add(keyId);
    }
    if (ask.size === 0) return out;
    const { rows } = await preparedRaw<{ rows: KeyRow[] }>(
      this.db,
      'select key_id, org_id, wrapped_key, master_key_id from privacy.subject_keys where key_id = any(?::uuid[])',
      [[...ask]],
    );
    const orgOf = new Map(wanted.map((w) => [w.keyId, w.orgId]));
    for (const row of rows) {
      if (orgOf.get(row.key_id) !== row.org_id) continue;
      const key = unwrap(this.ring, row);
      out.set(row.key_id, key);
      this.hold(heldKey(row.org_id, row.key_id), key, now);
    }
    return out;
  }
}

/** Deletes the data keys of anonymous ids (by suppression hash), in the erasure's transaction. Returns how many. */
/** Deletes the keys of the given anonymous id hashes (every form IdentifierHashes.lookups gives). */
export async function deleteSubjectKeys(trx: Db, orgId: string, anonymousIdHashes: readonly string[]): Promise<number> {
  if (anonymousIdHashes.length === 0) return 0;
  return trx('privacy.subject_keys').where({ org_id: orgId }).whereIn('subject_hash', anonymousIdHashes).delete();
}

/**
 * Wraps every key not under the current master key again under it, a page
 * at a time (each page one short transaction). Returns how many rows it
 * rewrapped. A row whose master key is not held fails the run: nothing can
 * open it, and the operator must hear so before retiring any key.
 */
export async function rewrapSubjectKeys(db: Db, ring: MasterKeyRing, pageSize = 1_000): Promise<number> {
  let done = 0;
  for (;;) {
    const page = await db.transaction(async (trx) => {
      const { rows } = (await trx.raw(
        `select key_id, org_id, wrapped_key, master_key_id from privacy.subject_keys
         where master_key_id <> ? order by key_id limit ? for update skip locked`,
        [ring.current.id, pageSize],
      )) as { rows: KeyRow[] };
      for (const row of rows) {
        const rewrapped = wrapDataKey(ring.current, row.org_id, row.key_id, unwrap(ring, row));
        await trx('privacy.subject_keys').where({ key_id: row.key_id }).update({ wrapped_key: rewrapped, master_key_id: ring.current.id });
      }
      return rows.length;
    });
    done += page;
    if (page < pageSize) return done;
  }
}

/** How many keys each master key wraps (what `svcctl keys status` shows before a key is retired). */
export async function subjectKeysByMasterKey(db: Db): Promise<Array<{ masterKeyId: string; keys: number }>> {
  const rows = (await db('privacy.subject_keys').select('master_key_id').count<Array<{ master_key_id: string; count: string }>>('* as count').groupBy('master_key_id').orderBy('master_key_id')) as Array<{
    master_key_id: string;
    count: string | number;
  }>;
  return rows.map((r) => ({ masterKeyId: r.master_key_id, keys: Number(r.count) }));
}
