import { describe, expect, it } from '@jest/globals';
import type { StoredBucket, StoredEntry } from './queue';
import { memoryStore, writeJSON } from './storage';
import type { TabCoordinator } from './tabs';
import { createTabs } from './tabs';
import { FakeLocks } from './test-support/fake-env';

const bucket = (ids: string[], h = 0, u?: 1): StoredBucket => ({
  h,
  ...(u ? { u } : {}),
  i: ids.map((id) => ({ e: { type: 'track', event: 'e', messageId: id, anonymousId: 'a', timestamp: 't', context: {} }, t: h, a: 0 })),
});
const wait = (): Promise<void> => new Promise(() => undefined);

/** The entries a tab takes over in one claim. */
async function claim(tab: TabCoordinator): Promise<StoredEntry[]> {
  const out: StoredEntry[] = [];
  await tab.claimOrphans((entries) => out.push(...entries));
  return out;
}

describe('cross-tab ownership', () => {
  it('with Web Locks, exactly one tab takes over the bucket of a closed tab; live tabs keep theirs', async () => {
    const store = memoryStore();
    const locks = new FakeLocks();
    const live = createTabs(store, 'svc_', 'live', locks, () => 0, 60_000, wait);
    await live.ready;
    writeJSON(store, live.bucketKey, bucket(['l1']));
    writeJSON(store, 'svc_queue_gone', bucket(['g1', 'g2']));
    const a = createTabs(store, 'svc_', 'a', locks, () => 0, 60_000, wait);
    const b = createTabs(store, 'svc_', 'b', locks, () => 0, 60_000, wait);
    const [fromA, fromB] = await Promise.all([claim(a), claim(b)]);
    expect([...fromA, ...fromB].map((x) => x.e.messageId).sort()).toEqual(['g1', 'g2']);
    expect(store.get('svc_queue_gone')).toBeNull();
    expect(store.get(live.bucketKey)).not.toBeNull();
    expect(locks.held.has('svc_tab_gone')).toBe(true); // held by the adopter for its life
  });

  it('without Web Locks, takes buckets flagged at pagehide or gone stale', async () => {
    const store = memoryStore();
    let now = 100_000;
    writeJSON(store, 'svc_queue_fresh', bucket(['f'], now - 1000));
    writeJSON(store, 'svc_queue_left', bucket(['l'], now - 1000, 1));
    writeJSON(store, 'svc_queue_stale', bucket(['s'], now - 61_000));
    const tab = createTabs(store, 'svc_', 'me', undefined, () => now, 60_000, wait);
    expect((await claim(tab)).map((x) => x.e.messageId).sort()).toEqual(['l', 's']);
    now += 60_000;
    expect((await claim(tab)).map((x) => x.e.messageId)).toEqual(['f']);
  });

  it('removes an orphaned bucket only after its entries were handed over, so no moment holds them nowhere', async () => {
    const store = memoryStore();
    writeJSON(store, 'svc_queue_gone', bucket(['g']));
    const tab = createTabs(store, 'svc_', 'me', new FakeLocks(), () => 0, 60_000, wait);
    const storedWhenHandedOver: Array<string | null> = [];
    await tab.claimOrphans(() => storedWhenHandedOver.push(store.get('svc_queue_gone')));
    expect(storedWhenHandedOver).toEqual([JSON.stringify(bucket(['g']))]);
    expect(store.get('svc_queue_gone')).toBeNull();
  });
});
