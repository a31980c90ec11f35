import { MAX_BATCH } from './config';
import type { KeyValueStore } from './storage';
import { readJSON, writeJSON } from './storage';
import type { SvcEvent } from './types';
import { utf8Length } from './util';

/** Queued events older than this are dropped (reported as `expired`). */
export const QUEUE_TTL_MS = 7 * 24 * 3600 * 1000;
/** Request body limit kept strictly under the gateway's 1 MiB. */
export const MAX_BODY_BYTES = 1_000_000;
/** `{"batch":[` + `]}` */
const BODY_OVERHEAD = 12;

/** Entry states: waiting, in a normal request, or in a keepalive request sent while the page was hidden or left. */
export const QUEUED = 0;
export const SENDING = 1;
export const BEACON = 2;
export type State = typeof QUEUED | typeof SENDING | typeof BEACON;

export interface QueueEntry {
  e: SvcEvent;
  /** Enqueued at (epoch ms). */
  t: number;
  /** Failed attempts so far: only failures a page saw count, never a request whose answer no page saw. */
  a: number;
  s: State;
  /** Serialised size in bytes, computed once. */
  n?: number;
}

/**
 * One entry as persisted. Every event stays persisted until a 2xx for it has
 * been seen (or it is dropped for a documented reason), whether or not it is
 * in a request at the time.
 */
export interface StoredEntry {
  e: SvcEvent;
  t: number;
  a: number;
  /** In flight: handed to a request whose answer had not been seen when the bucket was written. */
  f?: 1;
}

/** A tab's persisted queue. */
export interface StoredBucket {
  /** Written at (epoch ms). */
  h: number;
  /** Set when the page was hidden for good (pagehide). */
  u?: 1;
  i: StoredEntry[];
}

export const entrySize = (entry: QueueEntry): number => (entry.n ??= utf8Length(JSON.stringify(entry.e)));

/** Body bytes of a batch made of these entries. */
export const batchBytes = (entries: readonly QueueEntry[]): number =>
  entries.reduce((sum, x) => sum + entrySize(x), BODY_OVERHEAD + Math.max(0, entries.length - 1));

/**
 * The longest prefix of `entries` that fits one request of at most `maxCount`
 * events and `maxBytes` body bytes.
 */
export function fitBatch(entries: readonly QueueEntry[], maxCount: number, maxBytes: number): QueueEntry[] {
  const out: QueueEntry[] = [];
  let bytes = BODY_OVERHEAD - 1;
  for (const entry of entries) {
    if (out.length >= maxCount || bytes + 1 + entrySize(entry) > maxBytes) break;
    bytes += 1 + entrySize(entry);
    out.push(entry);
  }
  return out;
}

export interface Taken {
  batch: QueueEntry[];
  expired: QueueEntry[];
  exhausted: QueueEntry[];
  tooLarge: QueueEntry[];
}

export interface EventQueue {
  /** Every entry, oldest first, whatever its state. */
  list(): readonly QueueEntry[];
  queuedCount(): number;
  /** Adds an event; returns the entries evicted to keep at most `cap` queued. */
  push(event: SvcEvent): QueueEntry[];
  /** Merges entries persisted by another tab, skipping messageIds already present; returns the evicted. */
  adopt(stored: readonly StoredEntry[]): QueueEntry[];
  /**
   * Marks the next batch (queued entries only) as sending (persisted as in
   * flight) and returns it, along with entries removed because they expired,
   * exhausted their retries or can never fit a request.
   */
  take(maxRetries: number): Taken;
  remove(entries: readonly QueueEntry[]): void;
  has(entry: QueueEntry): boolean;
  /** Removes and returns every entry. */
  clear(): QueueEntry[];
  /** Writes this tab's bucket (`unloading` flags it for adoption by other tabs). */
  persist(unloading?: boolean): void;
}

/**
 * The in-memory event queue of one tab, mirrored into that tab's own storage
 * bucket so that nothing is lost when the page goes away.
 */
export function createQueue(store: KeyValueStore, bucketKey: string, now: () => number, cap = MAX_BATCH): EventQueue {
  let entries: QueueEntry[] = [];
  const queued = (): QueueEntry[] => entries.filter((x) => x.s === QUEUED);
  const evict = (): QueueEntry[] => {
    const q = queued();
    const over = q.slice(0, Math.max(0, q.length - cap));
    if (over.length) entries = entries.filter((x) => !over.includes(x));
    return over;
  };
  const queue: EventQueue = {
    list: () => entries,
    queuedCount: () => queued().length,
    push(event) {
      entries.push({ e: event, t: now(), a: 0, s: QUEUED });
      const evicted = evict();
      queue.persist();
      return evicted;
    },
    adopt(stored) {
      const ids = new Set(entries.map((x) => x.e.messageId));
      const fresh: StoredEntry[] = [];
      for (const x of stored) {
        if (x && x.e && typeof x.e.messageId === 'string' && !ids.has(x.e.messageId)) {
          ids.add(x.e.messageId);
          fresh.push(x);
        }
      }
      // adopted events are older than ours: they go first
      entries = [...fresh.map((x): QueueEntry => ({ e: x.e, t: +x.t || 0, a: +x.a || 0, s: QUEUED })), ...entries];
      const evicted = evict();
      queue.persist();
      return evicted;
    },
    take(maxRetries) {
      const t = now();
      const taken: Taken = { batch: [], expired: [], exhausted: [], tooLarge: [] };
      for (const x of queued()) {
        if (t - x.t > QUEUE_TTL_MS) taken.expired.push(x);
        else if (x.a > maxRetries) taken.exhausted.push(x);
        else if (entrySize(x) + BODY_OVERHEAD > MAX_BODY_BYTES) taken.tooLarge.push(x);
      }
      const dead = [...taken.expired, ...taken.exhausted, ...taken.tooLarge];
      if (dead.length) queue.remove(dead);
      taken.batch = fitBatch(queued(), MAX_BATCH, MAX_BODY_BYTES);
      for (const x of taken.batch) x.s = SENDING;
      if (taken.batch.length) queue.persist();
      return taken;
    },
    remove(gone) {
      entries = entries.filter((x) => !gone.includes(x));
      queue.persist();
    },
    has: (entry) => entries.includes(entry),
    clear() {
      const all = entries;
      entries = [];
      queue.persist();
      return all;
    },
    persist(unloading) {
      // Events in a request stay too: a request sent as the page goes away is the
      // likeliest to be lost, and its answer reaches no page, so whoever takes the
      // bucket over sends them again (the gateway de-duplicates on messageId).
      if (!entries.length) return store.remove(bucketKey);
      const bucket: StoredBucket = { h: now(), i: entries.map((x) => (x.s === QUEUED ? { e: x.e, t: x.t, a: x.a } : { e: x.e, t: x.t, a: x.a, f: 1 })) };
      if (unloading) bucket.u = 1;
      writeJSON(store, bucketKey, bucket);
    },
  };
  return queue;
}

/** The stored entries of a bucket, or none when it is missing or malformed. */
export function readBucket(store: KeyValueStore, key: string): StoredBucket | undefined {
  const bucket = readJSON<StoredBucket>(store, key);
  return bucket && Array.isArray(bucket.i) ? bucket : undefined;
}
