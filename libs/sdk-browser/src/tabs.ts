import type { LocksLike } from './dom';
import type { StoredEntry } from './queue';
import { readBucket } from './queue';
import type { KeyValueStore } from './storage';

export interface TabCoordinator {
  /** This tab's queue bucket key. */
  bucketKey: string;
  /** Settles once this tab holds its own lock (at once without Web Locks). */
  ready: Promise<void>;
  /**
   * Takes over the buckets of tabs that are gone: hands each one's entries to
   * `adopt`, which must persist them, and only then removes that bucket.
   */
  claimOrphans(adopt: (entries: StoredEntry[]) => void): Promise<void>;
}

const forever = (): Promise<never> => new Promise<never>(() => undefined);

/** Requests `name` only if free; when granted it is held until the page goes away. */
function tryHold(locks: LocksLike, name: string): Promise<boolean> {
  return new Promise((resolve) => {
    locks
      .request(name, { ifAvailable: true }, (lock) => {
        resolve(!!lock);
        return lock ? forever() : undefined;
      })
      .catch(() => resolve(false));
  });
}

/**
 * Cross-tab ownership of persisted queues. Each tab writes only its own bucket
 * and holds a Web Lock named after it for its whole life; a bucket whose lock
 * is free belongs to a tab that is gone, and exactly one tab can take that lock
 * over, so exactly one tab re-sends those events. Without Web Locks, a bucket
 * flagged at pagehide or not written for `staleMs` counts as orphaned.
 */
export function createTabs(
  store: KeyValueStore,
  prefix: string,
  tabId: string,
  locks: LocksLike | undefined,
  now: () => number,
  staleMs: number,
  wait: (ms: number) => Promise<void>,
): TabCoordinator {
  const bucketPrefix = `${prefix}queue_`;
  const lockPrefix = `${prefix}tab_`;
  const bucketKey = bucketPrefix + tabId;
  let useLocks = !!locks && typeof locks.request === 'function';
  let ready: Promise<void> = Promise.resolve();
  if (useLocks && locks) {
    ready = Promise.race([
      new Promise<void>((resolve) => {
        locks
          .request(lockPrefix + tabId, {}, () => {
            resolve();
            return forever();
          })
          .catch(() => {
            useLocks = false;
            resolve();
          });
      }),
      wait(2000),
    ]);
  }
  return {
    bucketKey,
    ready,
    async claimOrphans(adopt) {
      await ready;
      for (const key of store.keys()) {
        if (!key.startsWith(bucketPrefix) || key === bucketKey) continue;
        let claimed: boolean;
        if (useLocks && locks) claimed = await tryHold(locks, lockPrefix + key.slice(bucketPrefix.length));
        else {
          const bucket = readBucket(store, key);
          claimed = !bucket || bucket.u === 1 || now() - bucket.h > staleMs;
        }
        if (!claimed) continue;
        // adopted first, removed after: a page closing in between leaves the events in two buckets, never in none
        const bucket = readBucket(store, key);
        if (bucket?.i.length) adopt(bucket.i);
        store.remove(key);
      }
    },
  };
}
