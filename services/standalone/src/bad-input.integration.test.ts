/**
 * Issue 15's concrete cases, on the real stack and both bus tiers: each
 * malformed event sits between two good ones; the answer is a 200 that
 * names only it (or accepts it normalised), and both good events are stored.
 * Before the gateway's check was derived from the events.raw schema, the
 * first four answered 500 and lost the whole batch.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { EventReasons, Limits } from '@svc/contracts';
import { describeWithKafka, describeWithPostgres, nestedValue, testLogger } from '@svc/testkit';
import { rawRequest } from './test-support/fuzz/raw-http';
import { startFuzzStack, waitUntilStored, type FuzzStack, type Tier } from './test-support/fuzz/fuzz-stack';

const at = () => new Date().toISOString();
/** Stands for a value nested 100,000 levels deep, spliced into the request's JSON text. */
const DEEP = '<deep>';
const json = (value: unknown) => JSON.stringify(value).replace(JSON.stringify(DEEP), `${'['.repeat(100_000)}${']'.repeat(100_000)}`);
const event = (type: string, extra: Record<string, unknown>) => ({ type, messageId: randomUUID(), anonymousId: `anon_${randomUUID()}`, timestamp: at(), ...extra });

/** [case, the event, the reason it is rejected with, or null when it is accepted (normalised) and stored]. */
const CASES: Array<[string, () => Record<string, unknown>, string | null]> = [
  ['a group whose groupId is a number', () => event('group', { groupId: 42 }), EventReasons.groupIdRequiredForGroup],
  ['a page carrying "event": 42 (dropped: pages are stored as $pageview)', () => event('page', { event: 42 }), null],
  ['an identify with "userId": ""', () => event('identify', { userId: '' }), EventReasons.invalidUserId],
  ['an event name of 300 characters on a page (dropped)', () => event('page', { event: 'e'.repeat(300) }), null],
  ['an event name of 300 characters on a track', () => event('track', { event: 'e'.repeat(300) }), EventReasons.eventNameTooLong],
  ['a timestamp without a zone (read as UTC)', () => event('track', { event: 'x', timestamp: '2026-11-20T10:00' }), null],
  ['a date that does not exist', () => event('track', { event: 'x', timestamp: '2026-02-30T10:00:00Z' }), EventReasons.invalidTimestamp],
  // Written as JSON text: no JSON.stringify (this test's included) can write it, but a client can send it.
  ['properties nested 100,000 deep', () => event('track', { event: 'x', properties: { deep: DEEP } }), EventReasons.processingFailed],
  ['properties nested just under the hard cap', () => event('track', { event: 'x', properties: { deep: nestedValue(Limits.maxNestingDepth - 3) } }), null],
  ['a lone surrogate and U+0000 in properties', () => event('track', { event: 'x', properties: { ['k\u0000']: 'a\uD800b' } }), null],
  ['an alias whose userId is null', () => event('alias', { userId: null, previousId: 'p1' }), EventReasons.userIdRequiredForAlias],
];

function badInputSuite(tier: Tier): void {
  let stack: FuzzStack;
  beforeAll(async () => {
    stack = await startFuzzStack(tier, testLogger(`bad-input-${tier}`));
  }, 120_000);
  afterAll(async () => stack?.stop(), 60_000);

  it.each(CASES)('%s: dropped alone or stored, and its batch-mates stored', async (_name, makeBad, reason) => {
    const [target] = stack.targets;
    const good = [event('track', { event: 'before' }), event('identify', { userId: `user_${randomUUID()}` })];
    const bad = makeBad();
    const res = await rawRequest(stack.port, {
      method: 'POST',
      target: Buffer.from('/functions/v1/v1-batch'),
      headers: [
        ['Authorization', `Bearer ${target!.keys.write}`],
        ['Content-Type', 'application/json'],
      ],
      body: Buffer.from(json({ batch: [good[0], bad, good[1]] })),
    });
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body) as Record<string, unknown>;
    expect(body).toMatchObject(reason === null ? { success: true, processed: 3, failed: 0 } : { success: false, processed: 2, failed: 1, errors: [`${String(bad.messageId)}: ${reason}`] });

    const stored = new Set([...good, ...(reason === null ? [bad] : [])].map((e) => String(e.messageId)));
    expect(await waitUntilStored(stack.db, target!.orgId, stored, 30_000)).toBe(stored.size);
  });
}

describeWithPostgres('bad input on the real stack, Postgres-backed log', () => badInputSuite('postgres-log'));
describeWithKafka('bad input on the real stack, Kafka', () => badInputSuite('kafka'));
