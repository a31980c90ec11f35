import { describe, expect, it } from '@jest/globals';
import { batchBytes, BEACON, createQueue, fitBatch, MAX_BODY_BYTES, QUEUE_TTL_MS, QUEUED, readBucket, SENDING } from './queue';
import { memoryStore } from './storage';
import type { SvcEvent } from './types';

const ev = (id: string, extra: Record<string, unknown> = {}): SvcEvent => ({
  type: 'track',
  event: 'e',
  messageId: id,
  anonymousId: 'anon_x',
  timestamp: '2026-01-01T00:00:00.000Z',
  context: {},
  ...extra,
});

describe('event queue', () => {
  it('caps queued events at 100, evicting the oldest', () => {
    const queue = createQueue(memoryStore(), 'q', () => 0);
    for (let i = 0; i < 100; i++) expect(queue.push(ev(`m${i}`))).toEqual([]);
    const evicted = queue.push(ev('m100'));
    expect(evicted.map((x) => x.e.messageId)).toEqual(['m0']);
    expect(queue.queuedCount()).toBe(100);
    expect(queue.list()[0]?.e.messageId).toBe('m1');
  });

  it('takes at most 100 events and under 1 MB per batch, marking them as sending', () => {
    const queue = createQueue(memoryStore(), 'q', () => 0);
    const big = 'x'.repeat(300_000);
    for (let i = 0; i < 5; i++) queue.push(ev(`b${i}`, { properties: { big } }));
    const first = queue.take(3);
    expect(first.batch.map((x) => x.e.messageId)).toEqual(['b0', 'b1', 'b2']);
    expect(batchBytes(first.batch)).toBeLessThanOrEqual(MAX_BODY_BYTES);
    expect(first.batch.every((x) => x.s === SENDING)).toBe(true);
    expect(queue.take(3).batch.map((x) => x.e.messageId)).toEqual(['b3', 'b4']);

    const many = createQueue(memoryStore(), 'q2', () => 0);
    for (let i = 0; i < 100; i++) many.push(ev(`s${i}`));
    for (let i = 0; i < 20; i++) many.push(ev(`t${i}`)); // evicts s0..s19
    expect(many.take(3).batch).toHaveLength(100);
  });

  it('drops expired, exhausted and oversized events at take time', () => {
    let t = 0;
    const queue = createQueue(memoryStore(), 'q', () => t);
    queue.push(ev('old'));
    t = QUEUE_TTL_MS + 1;
    queue.push(ev('huge', { properties: { x: 'y'.repeat(MAX_BODY_BYTES) } }));
    queue.adopt([{ e: ev('tired'), t, a: 4 }]);
    queue.push(ev('ok'));
    const taken = queue.take(3);
    expect(taken.expired.map((x) => x.e.messageId)).toEqual(['old']);
    expect(taken.exhausted.map((x) => x.e.messageId)).toEqual(['tired']);
    expect(taken.tooLarge.map((x) => x.e.messageId)).toEqual(['huge']);
    expect(taken.batch.map((x) => x.e.messageId)).toEqual(['ok']);
    expect(queue.list()).toHaveLength(1);
  });

  it('persists its bucket on every change and removes it when empty', () => {
    const store = memoryStore();
    const queue = createQueue(store, 'svc_queue_tab1', () => 42);
    queue.push(ev('a'));
    queue.push(ev('b'));
    expect(readBucket(store, 'svc_queue_tab1')).toEqual({ h: 42, i: [{ e: ev('a'), t: 42, a: 0 }, { e: ev('b'), t: 42, a: 0 }] });
    const [a] = queue.list();
    if (a) queue.remove([a]);
    expect(readBucket(store, 'svc_queue_tab1')?.i.map((x) => x.e.messageId)).toEqual(['b']);
    queue.clear();
    expect(store.get('svc_queue_tab1')).toBeNull();
  });

  it.each([
    { state: 'queued', s: QUEUED, a: 0, stored: { a: 0 } },
    { state: 'queued after a failure', s: QUEUED, a: 2, stored: { a: 2 } },
    { state: 'in a normal request', s: SENDING, a: 0, stored: { a: 0, f: 1 } },
    { state: 'in a keepalive request', s: BEACON, a: 0, stored: { a: 0, f: 1 } },
    { state: 'in a keepalive request after a failure', s: BEACON, a: 1, stored: { a: 1, f: 1 } },
  ])('persists an event $state, marked in flight when in a request, its attempts as counted', ({ s, a, stored }) => {
    const store = memoryStore();
    const queue = createQueue(store, 'k', () => 1);
    queue.push(ev('x'));
    const [entry] = queue.list();
    if (!entry) throw new Error('queue lost the event');
    Object.assign(entry, { s, a });
    queue.persist(true);
    expect(readBucket(store, 'k')).toEqual({ h: 1, u: 1, i: [{ e: ev('x'), t: 1, ...stored }] });
  });

  it('persists the batch it takes as in flight', () => {
    const store = memoryStore();
    const queue = createQueue(store, 'k', () => 1);
    queue.push(ev('a'));
    queue.take(3);
    queue.push(ev('b'));
    expect(readBucket(store, 'k')?.i.map((x) => [x.e.messageId, x.f])).toEqual([
      ['a', 1],
      ['b', undefined],
    ]);
  });

  it('adopts stored entries first, de-duplicated by messageId', () => {
    const queue = createQueue(memoryStore(), 'q', () => 5);
    queue.push(ev('mine'));
    queue.adopt([
      { e: ev('theirs'), t: 1, a: 1 },
      { e: ev('mine'), t: 1, a: 0 },
      { e: ev('theirs'), t: 1, a: 0 },
    ]);
    expect(queue.list().map((x) => [x.e.messageId, x.a, x.s])).toEqual([
      ['theirs', 1, QUEUED],
      ['mine', 0, QUEUED],
    ]);
  });
});

describe('fitBatch', () => {
  it('stops at the byte budget', () => {
    const entries = ['a', 'b', 'c'].map((id) => ({ e: ev(id), t: 0, a: 0, s: QUEUED as typeof QUEUED }));
    const one = batchBytes(entries.slice(0, 1));
    expect(fitBatch(entries, 100, one)).toHaveLength(1);
    expect(fitBatch(entries, 100, one - 1)).toHaveLength(0);
    expect(fitBatch(entries, 2, 1e9)).toHaveLength(2);
    expect(batchBytes(entries)).toBe(JSON.stringify({ batch: entries.map((x) => x.e) }).length);
  });
});
