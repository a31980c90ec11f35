import { describe, expect, it } from '@jest/globals';
import { createDelivery, KEEPALIVE_BUDGET } from './delivery';
import type { QueueEntry } from './queue';
import { createQueue, readBucket } from './queue';
import type { KeyValueStore } from './storage';
import { memoryStore } from './storage';
import { FakeClock } from './test-support/fake-env';
import type { SendOutcome } from './transport';
import type { SvcError, SvcEvent } from './types';

const ev = (id: string, size = 0): SvcEvent => ({
  type: 'track',
  event: 'e',
  messageId: id,
  anonymousId: 'anon_x',
  timestamp: '2026-01-01T00:00:00.000Z',
  context: size ? { pad: 'p'.repeat(size) } : {},
});

const OK: SendOutcome = { ok: true, status: 200, body: { success: true }, quota: null };
const FAIL_503: SendOutcome = { ok: false, retry: true, status: 503, message: 'HTTP 503' };

interface SetupOptions {
  flushAt?: number;
  flushInterval?: number;
  maxRetries?: number;
  keepalive?: boolean;
  replies?: Array<SendOutcome | Promise<SendOutcome>>;
  /** Storage shared with an earlier page (default: a fresh one). */
  store?: KeyValueStore;
  bucket?: string;
  /** navigator.sendBeacon's answer per call (true: queued by the browser); unset: no beacon at all. */
  beaconAccepts?: boolean[];
}

function setup(options: SetupOptions = {}) {
  const clock = new FakeClock(0);
  const store = options.store ?? memoryStore();
  const queue = createQueue(store, options.bucket ?? 'bucket', clock.now);
  const sends: Array<{ ids: string[]; keepalive: boolean; at: number }> = [];
  const replies = [...(options.replies ?? [])];
  const delivered: string[] = [];
  const drops: Array<{ code: string; ids: string[] }> = [];
  const beacons: string[][] = [];
  const accepts = [...(options.beaconAccepts ?? [])];
  const delivery = createDelivery({
    queue,
    send: async (events, keepalive) => {
      sends.push({ ids: events.map((e) => e.messageId), keepalive, at: clock.now() });
      return replies.shift() ?? OK;
    },
    now: clock.now,
    random: () => 1,
    setTimeout: clock.setTimeout,
    clearTimeout: clock.clearTimeout,
    flushAt: options.flushAt ?? 20,
    flushInterval: options.flushInterval ?? 10_000,
    maxRetries: options.maxRetries ?? 3,
    keepalive: options.keepalive ?? true,
    ...(options.beaconAccepts
      ? {
          sendBeacon: (events: SvcEvent[]) => {
            const accepted = accepts.shift() ?? false;
            if (accepted) beacons.push(events.map((e) => e.messageId));
            return accepted;
          },
        }
      : {}),
    delivered: (entries: QueueEntry[]) => delivered.push(...entries.map((x) => x.e.messageId)),
    dropped: (error: SvcError, entries: QueueEntry[]) => drops.push({ code: error.code, ids: entries.map((x) => x.e.messageId) }),
    log: () => undefined,
  });
  return { clock, store, queue, delivery, sends, delivered, drops, beacons };
}

describe('delivery', () => {
  it('sends when flushAt events are queued', async () => {
    const t = setup({ flushAt: 3 });
    t.delivery.enqueue(ev('a'));
    t.delivery.enqueue(ev('b'));
    await t.clock.advance(0);
    expect(t.sends).toEqual([]);
    t.delivery.enqueue(ev('c'));
    await t.clock.advance(0);
    expect(t.sends).toEqual([{ ids: ['a', 'b', 'c'], keepalive: false, at: 0 }]);
    expect(t.delivered).toEqual(['a', 'b', 'c']);
    expect(t.store.get('bucket')).toBeNull();
  });

  it('sends flushInterval after the first queued event', async () => {
    const t = setup({ flushInterval: 5000 });
    t.delivery.enqueue(ev('a'));
    await t.clock.advance(3000);
    t.delivery.enqueue(ev('b'));
    await t.clock.advance(1999);
    expect(t.sends).toHaveLength(0);
    await t.clock.advance(1);
    expect(t.sends).toEqual([{ ids: ['a', 'b'], keepalive: false, at: 5000 }]);
    expect(t.clock.pending()).toBe(0);
  });

  it('retries 5xx with exponential backoff and the same messageIds, then succeeds', async () => {
    const t = setup({ flushAt: 1, replies: [FAIL_503, FAIL_503, OK] });
    t.delivery.enqueue(ev('a'));
    await t.clock.advance(0);
    await t.clock.advance(1000); // first retry after 1 s (random 1 => full ceiling)
    await t.clock.advance(2000); // second after 2 s
    expect(t.sends.map((s) => [s.ids, s.at])).toEqual([
      [['a'], 0],
      [['a'], 1000],
      [['a'], 3000],
    ]);
    expect(t.delivered).toEqual(['a']);
    expect(t.drops).toEqual([]);
  });

  it('gives up after maxRetries retries and reports the events', async () => {
    const t = setup({ flushAt: 1, maxRetries: 2, replies: [FAIL_503, FAIL_503, FAIL_503, FAIL_503] });
    t.delivery.enqueue(ev('a'));
    await t.clock.advance(60_000);
    expect(t.sends).toHaveLength(3);
    expect(t.drops).toEqual([{ code: 'retries_exhausted', ids: ['a'] }]);
    expect(t.queue.list()).toHaveLength(0);
  });

  it('makes one attempt with maxRetries 0', async () => {
    const t = setup({ flushAt: 1, maxRetries: 0, replies: [FAIL_503] });
    t.delivery.enqueue(ev('a'));
    await t.clock.advance(60_000);
    expect(t.sends).toHaveLength(1);
    expect(t.drops).toEqual([{ code: 'retries_exhausted', ids: ['a'] }]);
  });

  it('drops on any 4xx, 429 included, without retrying', async () => {
    const t = setup({ flushAt: 1, replies: [{ ok: false, retry: false, status: 429, message: 'Rate limit exceeded' }] });
    t.delivery.enqueue(ev('a'));
    await t.clock.advance(60_000);
    expect(t.sends).toHaveLength(1);
    expect(t.drops).toEqual([{ code: 'rejected', ids: ['a'] }]);
  });

  it('reports evictions from a full queue', async () => {
    const t = setup({ flushAt: 100 });
    for (let i = 0; i < 99; i++) t.delivery.enqueue(ev(`m${i}`));
    t.delivery.enqueue(ev('m99')); // flushAt reached: the send is scheduled, not yet made

    t.delivery.enqueue(ev('m100'));
    expect(t.drops).toEqual([{ code: 'evicted', ids: ['m0'] }]);
  });

  it('flush() resolves once everything is delivered, through retries', async () => {
    const t = setup({ replies: [FAIL_503, OK] });
    t.delivery.enqueue(ev('a'));
    t.delivery.enqueue(ev('b'));
    let done = false;
    void t.delivery.flush().then(() => (done = true));
    await t.clock.advance(0);
    expect(done).toBe(false);
    await t.clock.advance(1000);
    expect(done).toBe(true);
    expect(t.delivered).toEqual(['a', 'b']);
  });

  it('on pagehide sends everything, in-flight requests included, with keepalive within 64 KiB', async () => {
    let release: (o: SendOutcome) => void = () => undefined;
    const t = setup({ flushAt: 2, replies: [new Promise<SendOutcome>((resolve) => (release = resolve))] });
    t.delivery.enqueue(ev('m0', 10_000));
    t.delivery.enqueue(ev('m1', 10_000));
    await t.clock.advance(0); // m0, m1 now in a normal request that the navigation would abort
    expect(t.sends).toEqual([{ ids: ['m0', 'm1'], keepalive: false, at: 0 }]);
    for (let i = 2; i < 12; i++) t.queue.push(ev(`m${i}`, 10_000)); // ~120 KB in all
    t.delivery.beacon(true);
    const sent = t.sends.filter((s) => s.keepalive);
    const ids = sent.flatMap((s) => s.ids);
    expect(ids.slice(0, 2)).toEqual(['m0', 'm1']);
    const bytes = sent.reduce((sum, s) => sum + JSON.stringify({ batch: s.ids.map((id) => ev(id, 10_000)) }).length, 0);
    expect(bytes).toBeLessThanOrEqual(KEEPALIVE_BUDGET);
    expect(bytes).toBeGreaterThan(KEEPALIVE_BUDGET - 11_000);
    // everything stays persisted until acknowledged: what went out marked in flight, what did not fit as queued
    const stored = readBucket(t.store, 'bucket');
    expect(stored?.u).toBe(1);
    expect(stored?.i.map((x) => x.e.messageId)).toEqual(Array.from({ length: 12 }, (_, i) => `m${i}`));
    expect(stored?.i.filter((x) => x.f).map((x) => x.e.messageId)).toEqual(ids);
    // a second trigger (visibilitychange after pagehide) sends nothing twice
    const before = t.sends.length;
    t.delivery.beacon(false);
    expect(t.sends.length).toBe(before);
    release(OK);
    await t.clock.advance(0);
    expect(t.delivered.slice(0, 2)).toEqual(['m0', 'm1']);
  });

  const never = new Promise<SendOutcome>(() => undefined);
  it.each([
    { answer: 'a 2xx', reply: OK, stored: undefined, delivered: ['a'], drops: [] },
    { answer: 'a 503, seen by the page', reply: FAIL_503, stored: { a: 1 }, delivered: [], drops: [] },
    { answer: 'none (the page went away first)', reply: never, stored: { a: 0, f: 1 }, delivered: [], drops: [] },
    { answer: 'a 400', reply: { ok: false, retry: false, status: 400, message: 'HTTP 400' } as SendOutcome, stored: undefined, delivered: [], drops: [{ code: 'rejected', ids: ['a'] }] },
  ])('an event sent by keepalive leaves storage only on a 2xx or a 4xx: answer $answer', async ({ reply, stored, delivered, drops }) => {
    const t = setup({ replies: [reply] });
    t.delivery.enqueue(ev('a'));
    t.delivery.beacon(true);
    await t.clock.advance(0);
    expect(readBucket(t.store, 'bucket')?.i.map(({ a, f }) => (f ? { a, f } : { a }))[0]).toEqual(stored);
    expect(t.delivered).toEqual(delivered);
    expect(t.drops).toEqual(drops);
  });

  it('the next page sends again what a page left in flight, its unanswered attempt not counted against the retries', async () => {
    const first = setup({ flushAt: 1, maxRetries: 1, replies: [FAIL_503, never] });
    first.delivery.enqueue(ev('a'));
    await first.clock.advance(0); // failed once: waiting out its last retry
    first.delivery.beacon(true); // the page is left; its keepalive request is lost
    const left = readBucket(first.store, 'bucket')?.i ?? [];
    expect(left.map(({ a, f }) => ({ a, f }))).toEqual([{ a: 1, f: 1 }]);

    const next = setup({ store: first.store, bucket: 'next', maxRetries: 1 });
    next.delivery.adopt(left);
    await next.clock.advance(0);
    expect(next.sends).toEqual([{ ids: ['a'], keepalive: false, at: 0 }]);
    expect(next.delivered).toEqual(['a']);
    expect(next.drops).toEqual([]);
    expect(next.store.get('next')).toBeNull();
  });

  it('the failure of a normal request a leaving page aborted does not touch the events it re-sent by keepalive', async () => {
    let abort: (o: SendOutcome) => void = () => undefined;
    const t = setup({ flushAt: 1, replies: [new Promise<SendOutcome>((resolve) => (abort = resolve)), never] });
    t.delivery.enqueue(ev('a'));
    await t.clock.advance(0);
    t.delivery.beacon(true);
    abort({ ok: false, retry: true, status: 0, message: 'network error: aborted' });
    await t.clock.advance(60_000);
    expect(t.sends.map((s) => s.keepalive)).toEqual([false, true]);
    expect(readBucket(t.store, 'bucket')?.i.map(({ a, f }) => ({ a, f }))).toEqual([{ a: 0, f: 1 }]);
  });

  it('a hidden page sends by keepalive and handles the answers like any other', async () => {
    const t = setup({ replies: [FAIL_503, OK] });
    t.delivery.enqueue(ev('a'));
    t.delivery.beacon(false);
    expect(t.sends).toEqual([{ ids: ['a'], keepalive: true, at: 0 }]);
    await t.clock.advance(1000);
    expect(t.sends[1]).toEqual({ ids: ['a'], keepalive: false, at: 1000 });
    expect(t.delivered).toEqual(['a']);
  });

  it('without keepalive support, leaves everything persisted for the next page', async () => {
    const t = setup({ keepalive: false });
    t.delivery.enqueue(ev('a'));
    t.delivery.beacon(true);
    expect(t.sends).toEqual([]);
    expect(readBucket(t.store, 'bucket')).toMatchObject({ u: 1, i: [{ e: ev('a'), a: 0 }] });
    t.delivery.beacon(false); // merely hidden: a normal send
    await t.clock.advance(0);
    expect(t.sends).toEqual([{ ids: ['a'], keepalive: false, at: 0 }]);
  });

  it('without keepalive, falls back to sendBeacon at page exit; the events stay persisted, in flight, for the next page', async () => {
    const t = setup({ keepalive: false, beaconAccepts: [true] });
    t.delivery.enqueue(ev('a'));
    t.delivery.enqueue(ev('b'));
    t.delivery.beacon(true);
    expect(t.beacons).toEqual([['a', 'b']]);
    expect(t.sends).toEqual([]);
    // No answer is ever seen: kept until a page sees a 2xx for them (the server de-duplicates).
    expect(readBucket(t.store, 'bucket')).toMatchObject({ u: 1, i: [{ e: ev('a'), f: 1 }, { e: ev('b'), f: 1 }] });
  });

  it('a beacon the browser refuses leaves its events queued and persisted', async () => {
    const t = setup({ keepalive: false, beaconAccepts: [false] });
    t.delivery.enqueue(ev('a'));
    t.delivery.beacon(true);
    expect(t.beacons).toEqual([]);
    expect(readBucket(t.store, 'bucket')).toMatchObject({ u: 1, i: [{ e: ev('a'), a: 0 }] });
    expect(readBucket(t.store, 'bucket')?.i[0]).not.toHaveProperty('f');
  });

  it('beacons split within the 64 KiB budget, as keepalive requests do', async () => {
    const t = setup({ keepalive: false, beaconAccepts: [true, true, true] });
    for (let i = 0; i < 3; i++) t.delivery.enqueue(ev(`m${i}`, 25_000));
    t.delivery.beacon(true);
    expect(t.beacons).toEqual([['m0', 'm1']]);
  });

  it('clear() drops the queue and stops timers', async () => {
    const t = setup();
    t.delivery.enqueue(ev('a'));
    expect(t.delivery.clear().map((x) => x.e.messageId)).toEqual(['a']);
    await t.clock.advance(60_000);
    expect(t.sends).toEqual([]);
    expect(t.clock.pending()).toBe(0);
  });
});
