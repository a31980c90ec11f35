import { describe, expect, it } from '@jest/globals';
import { verifiedKey } from '@svc/testkit';
import type { SqlCondition } from '@svc/runtime';
import type { VerifiedKey } from '../accounts/store';
import { KeyCache } from './key-cache';

const keyNamed = (n: number) => `uk_live_${String(n).padStart(40, '0')}`;

/** The accounts store's readApiKey over a table of keys; counts reads. */
function accounts(known: Map<string, Partial<VerifiedKey>>) {
  const reads: string[] = [];
  return {
    reads,
    store: {
      readApiKey: async (key: string): Promise<{ key: VerifiedKey; unchanged: SqlCondition } | undefined> => {
        reads.push(key);
        const k = known.get(key);
        if (!k) return undefined;
        const verified = verifiedKey({ keyId: key.slice(-4), orgId: 'o1', ...k });
        return { key: verified, unchanged: { sql: 'select 1 where ? = ?', bindings: [verified.keyId, 'v1'] } };
      },
    },
  };
}

describe('KeyCache', () => {
  it('reads a key once, then serves it unconfirmed with the condition that confirms it', async () => {
    const { store, reads } = accounts(new Map([[keyNamed(1), { planState: 'grace' }]]));
    const cache = new KeyCache(store);
    const first = await cache.verifyApiKey(keyNamed(1));
    expect(first).toMatchObject({ keyId: '0001', planState: 'grace' });
    expect(first!.unconfirmed).toBeUndefined();
    const second = await cache.verifyApiKey(keyNamed(1));
    expect(second).toMatchObject({ keyId: '0001', planState: 'grace', unconfirmed: { bindings: ['0001', 'v1'] } });
    expect(reads).toHaveLength(1);
  });

  it('fresh: reads again and holds what it read; a key gone since is no longer held', async () => {
    const known = new Map<string, Partial<VerifiedKey>>([[keyNamed(1), { type: 'write' }]]);
    const { store, reads } = accounts(known);
    const cache = new KeyCache(store);
    await cache.verifyApiKey(keyNamed(1));
    known.set(keyNamed(1), { type: 'admin' });
    expect(await cache.verifyApiKey(keyNamed(1), { fresh: true })).toMatchObject({ type: 'admin' });
    expect(await cache.verifyApiKey(keyNamed(1))).toMatchObject({ type: 'admin', unconfirmed: expect.anything() });
    known.delete(keyNamed(1));
    expect(await cache.verifyApiKey(keyNamed(1), { fresh: true })).toBeUndefined();
    expect(await cache.verifyApiKey(keyNamed(1))).toBeUndefined();
    expect(reads).toHaveLength(4);
  });

  it('never holds an unknown or malformed key: each is looked up (or refused) every time', async () => {
    const { store, reads } = accounts(new Map());
    const cache = new KeyCache(store);
    for (let i = 0; i < 3; i++) expect(await cache.verifyApiKey(keyNamed(7))).toBeUndefined();
    expect(await cache.verifyApiKey('not a key')).toBeUndefined();
    expect(reads).toEqual([keyNamed(7), keyNamed(7), keyNamed(7)]);
  });

  it('holds(): true only for a key it verified and still holds, without a read', async () => {
    const known = new Map<string, Partial<VerifiedKey>>([[keyNamed(1), {}]]);
    const { store, reads } = accounts(known);
    const cache = new KeyCache(store);
    expect(cache.holds(keyNamed(1))).toBe(false);
    await cache.verifyApiKey(keyNamed(1));
    await cache.verifyApiKey(keyNamed(2));
    expect([cache.holds(keyNamed(1)), cache.holds(keyNamed(2)), cache.holds('not a key')]).toEqual([true, false, false]);
    known.delete(keyNamed(1));
    await cache.verifyApiKey(keyNamed(1), { fresh: true });
    expect(cache.holds(keyNamed(1))).toBe(false);
    expect(reads).toHaveLength(3);
  });

  it('holds at most maxKeys, forgetting the oldest', async () => {
    const known = new Map([1, 2, 3].map((n) => [keyNamed(n), {}]));
    const { store, reads } = accounts(known);
    const cache = new KeyCache(store, { maxKeys: 2 });
    for (const n of [1, 2, 3]) await cache.verifyApiKey(keyNamed(n));
    for (const n of [2, 3, 1]) await cache.verifyApiKey(keyNamed(n));
    expect(reads).toEqual([1, 2, 3, 1].map(keyNamed));
  });

  describe('through a database outage (outageGraceMs)', () => {
    const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    function failing(known: Map<string, Partial<VerifiedKey>>) {
      const { store } = accounts(known);
      let failure: Error | undefined;
      return {
        fail: (err: Error | undefined) => (failure = err),
        store: { readApiKey: (key: string) => (failure ? Promise.reject(failure) : store.readApiKey(key)) },
      };
    }
    const setUp = (graceMs: number) => {
      let now = 1_000_000;
      const db = failing(new Map([[keyNamed(1), { type: 'write' }]]));
      const cache = new KeyCache(db.store, { outageGraceMs: graceMs, now: () => now });
      return { cache, db, advance: (ms: number) => (now += ms) };
    };

    it('serves a key the database confirmed within the grace, as confirmed, marked', async () => {
      const { cache, db, advance } = setUp(60_000);
      await cache.verifyApiKey(keyNamed(1));
      db.fail(down);
      advance(59_000);
      const served = await cache.verifyApiKey(keyNamed(1), { fresh: true });
      expect(served).toMatchObject({ keyId: '0001', type: 'write', servedThroughOutage: true });
      expect(served!.unconfirmed).toBeUndefined();
    });

    it('a confirmation by a request restarts the grace; past it, the failure stands', async () => {
      const { cache, db, advance } = setUp(60_000);
      await cache.verifyApiKey(keyNamed(1));
      advance(50_000);
      cache.confirmed((await cache.verifyApiKey(keyNamed(1)))!);
      db.fail(down);
      advance(50_000);
      expect(await cache.verifyApiKey(keyNamed(1), { fresh: true })).toMatchObject({ servedThroughOutage: true });
      advance(20_000);
      await expect(cache.verifyApiKey(keyNamed(1), { fresh: true })).rejects.toThrow(down);
    });

    it.each([
      ['no grace', 0, down],
      ['an error that is no outage', 60_000, new Error('syntax error at or near')],
    ])('%s: the read fails as without a cache', async (_, grace, err) => {
      const { cache, db } = setUp(grace);
      await cache.verifyApiKey(keyNamed(1));
      db.fail(err);
      await expect(cache.verifyApiKey(keyNamed(1), { fresh: true })).rejects.toThrow(err);
    });

    it('a key never read is not served through an outage', async () => {
      const { cache, db } = setUp(60_000);
      db.fail(down);
      await expect(cache.verifyApiKey(keyNamed(1))).rejects.toThrow(down);
    });

    it('once the database answers, a key revoked meanwhile is refused', async () => {
      const known = new Map<string, Partial<VerifiedKey>>([[keyNamed(1), { type: 'write' }]]);
      const db = failing(known);
      const cache = new KeyCache(db.store, { outageGraceMs: 60_000 });
      await cache.verifyApiKey(keyNamed(1));
      db.fail(down);
      expect(await cache.verifyApiKey(keyNamed(1), { fresh: true })).toMatchObject({ servedThroughOutage: true });
      known.delete(keyNamed(1));
      db.fail(undefined);
      expect(await cache.verifyApiKey(keyNamed(1), { fresh: true })).toBeUndefined();
    });
  });
});
