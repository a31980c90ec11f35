import { describe, expect, it } from '@jest/globals';
import type { OutgoingMessage } from '../port';
import { AppendLane } from './append-lane';

const messages = (call: string, n = 2): OutgoingMessage[] => Array.from({ length: n }, (_, i) => ({ key: call, value: { call, i } }));
const idsOf = (ms: readonly OutgoingMessage[]) => ms.map((m) => `${(m.value as { call: string }).call}.${(m.value as { i: number }).i}`);

/** An append that records what it was given and finishes when told. */
function fakeAppend(fail?: (ms: readonly OutgoingMessage[]) => Error | undefined) {
  const appends: string[][] = [];
  const pending: Array<() => void> = [];
  const append = (ms: readonly OutgoingMessage[]) =>
    new Promise<void>((resolve, reject) => {
      appends.push(idsOf(ms));
      pending.push(() => {
        const error = fail?.(ms);
        if (error) reject(error);
        else resolve();
      });
    });
  /** Lets every append the lane starts finish, until it has been idle for a few turns of the event loop. */
  const finishAll = async () => {
    for (let idle = 0; idle < 3; ) {
      await new Promise((r) => setImmediate(r));
      const next = pending.shift();
      if (next) {
        next();
        idle = 0;
      } else idle++;
    }
  };
  return { append, appends, finishAll, inFlight: () => pending.length };
}

const unavailable = (err: unknown) => (err as Error).message === 'connection refused';

describe('AppendLane (group commit)', () => {
  it('appends the calls that arrive together as one, and those arriving while it is in flight as the next one, in order', async () => {
    const fake = fakeAppend();
    const lane = new AppendLane(fake.append, unavailable);
    const first = [lane.submit(messages('a')), lane.submit(messages('b'))];
    await new Promise((r) => setImmediate(r));
    expect(fake.appends).toEqual([['a.0', 'a.1', 'b.0', 'b.1']]);
    // In flight: these wait, and go together once it commits.
    const second = [lane.submit(messages('c')), lane.submit(messages('d', 1)), lane.submit(messages('e'))];
    await new Promise((r) => setImmediate(r));
    expect(fake.inFlight()).toBe(1);
    await fake.finishAll();
    await Promise.all([...first, ...second].map((c) => c.done));
    expect(fake.appends).toEqual([
      ['a.0', 'a.1', 'b.0', 'b.1'],
      ['c.0', 'c.1', 'd.0', 'e.0', 'e.1'],
    ]);
  });

  it('answers a call only once the append holding it has committed', async () => {
    const fake = fakeAppend();
    const lane = new AppendLane(fake.append, unavailable);
    let answered = false;
    void lane.submit(messages('a')).done.then(() => (answered = true));
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    await fake.finishAll();
    expect(answered).toBe(true);
  });

  it('splits a queue above 2,000 messages, yet sends a larger single call alone', async () => {
    const fake = fakeAppend();
    const lane = new AppendLane(fake.append, unavailable);
    const calls = [lane.submit(messages('big', 2_500)), lane.submit(messages('a', 1_200)), lane.submit(messages('b', 800)), lane.submit(messages('c', 1))];
    await fake.finishAll();
    await new Promise((r) => setImmediate(r));
    await fake.finishAll();
    await fake.finishAll();
    await Promise.all(calls.map((c) => c.done));
    expect(fake.appends.map((a) => a.length)).toEqual([2_500, 2_000, 1]);
  });

  it('when a group fails on its contents, appends each call alone: one caller\'s bad message costs no other caller anything', async () => {
    const fake = fakeAppend((ms) => (idsOf(ms).includes('bad.0') ? new Error('invalid input syntax for type json') : undefined));
    const lane = new AppendLane(fake.append, unavailable);
    const [good, bad, other] = [lane.submit(messages('good')), lane.submit(messages('bad')), lane.submit(messages('other'))];
    const outcomes = Promise.allSettled([good.done, bad.done, other.done]);
    for (let i = 0; i < 5; i++) await fake.finishAll();
    expect((await outcomes).map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(fake.appends).toEqual([['good.0', 'good.1', 'bad.0', 'bad.1', 'other.0', 'other.1'], ['good.0', 'good.1'], ['bad.0', 'bad.1'], ['other.0', 'other.1']]);
  });

  it('when the database cannot be reached, fails every call of the group at once (no retry alone)', async () => {
    const fake = fakeAppend(() => new Error('connection refused'));
    const lane = new AppendLane(fake.append, unavailable);
    const calls = [lane.submit(messages('a')), lane.submit(messages('b'))];
    const outcomes = Promise.allSettled(calls.map((c) => c.done));
    await fake.finishAll();
    expect((await outcomes).map((o) => (o.status === 'rejected' ? (o.reason as Error).message : 'stored'))).toEqual(['connection refused', 'connection refused']);
    expect(fake.appends).toHaveLength(1);
  });

  it('never appends a call its caller abandoned while it waited', async () => {
    const fake = fakeAppend();
    const lane = new AppendLane(fake.append, unavailable);
    const first = lane.submit(messages('a'));
    await new Promise((r) => setImmediate(r));
    const gone = lane.submit(messages('gone'));
    const kept = lane.submit(messages('kept'));
    gone.abandon();
    await fake.finishAll();
    await fake.finishAll();
    await Promise.all([first.done, kept.done]);
    expect(fake.appends).toEqual([['a.0', 'a.1'], ['kept.0', 'kept.1']]);
  });
});
