import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { ErasureRequest, ProfileErased } from '@svc/contracts';
import { getErasure, publishPendingErasures, requestErasure } from '@svc/identity';
import { describeWithPostgres } from '@svc/testkit';
import { createErasureHandler } from './erasure';
import type { ResolverMetrics } from './metrics';
import { Harness } from './test-support/harness';

/**
 * The resolver's part of an erasure, on the Postgres-backed log: the request
 * carried out from profiles.erasure-requests under the batch path's locks,
 * exactly once however often it is delivered; the person's identifiers
 * suppressed, so the batch path drops any event carrying one (an alias's
 * previousId and a trait's email included), counted; a request whose profile
 * is gone fails with its reason; other people and organisations untouched.
 */
describeWithPostgres('erasure in the identity resolver', () => {
  const h = new Harness();
  let metrics: ResolverMetrics;
  let tombstones: Awaited<ReturnType<Harness['collect']>>;
  beforeAll(async () => {
    await h.setUp();
    tombstones = await h.collect(h.topics.profilesErased);
    ({ metrics } = await h.startResolver({ erasureRequests: h.topics.erasureRequests }));
  });
  afterAll(() => h.tearDown());

  const person = (org: string) => [
    h.envelope(org, { type: 'page', anonymousId: 'anon-1', context: { session: { id: 's-1' }, campaign: { gclid: 'gclid-1' } } }),
    h.envelope(org, { type: 'identify', anonymousId: 'anon-1', userId: 'u-1', traits: { email: 'one@example.com' } }),
    h.envelope(org, { type: 'page', anonymousId: 'anon-2' }),
    h.envelope(org, { type: 'identify', anonymousId: 'anon-2', userId: 'u-1' }),
  ];
  const rows = async (org: string, table: string) => h.count(`select count(*) as n from identity.${table} where org_id = ?`, [org]);

  it('erases the person and every profile merged into them, once, and drops their later events', async () => {
    const [org, bystander] = [await h.org('Erasing'), await h.org('Bystander')];
    for (const o of [org, bystander]) {
      for (const e of person(o)) await h.ingest([e]);
      await h.ingest([h.envelope(o, { type: 'identify', anonymousId: 'anon-9', userId: 'u-9' })]);
    }
    const merged = await h.profileBySignal(org, 'user_id', 'u-1');
    expect(await h.count('select count(*) as n from identity.profiles where org_id = ? and merged_into = ?', [org, merged!.id])).toBe(1);

    const recorded = await requestErasure(h.db, { orgId: org, target: { kind: 'email', value: ' One@Example.com' }, actor: 'test', hashes: h.hashes });
    if (recorded.outcome !== 'recorded') throw new Error(`not recorded: ${recorded.outcome}`);
    expect(recorded.erasure).toMatchObject({ status: 'pending', profile_id: merged!.id, requested_by_kind: 'email' });
    expect(await publishPendingErasures(h.db, h.bus, h.topics.erasureRequests)).toBe(1);
    await h.waitFor('the erasure done', async () => (await getErasure(h.db, org, recorded.erasure.id))?.status === 'done');
    expect(await getErasure(h.db, org, recorded.erasure.id)).toMatchObject({ status: 'done', profiles_erased: 2 });

    for (const table of ['profiles', 'identity_signals', 'events', 'profile_sessions', 'click_ids', 'merges', 'canonical_ids']) {
      // The other person (u-9) keeps one profile, two signals, one event.
      expect([table, await rows(org, table)]).toEqual([table, { profiles: 1, identity_signals: 2, events: 1, canonical_ids: 1 }[table] ?? 0]);
    }
    // Nothing of theirs waits in the outbox but the tombstone (until the relay sends it).
    expect(await h.count(`select count(*) as n from identity.outbox where topic <> 'profilesErased' and (message_key = any(?) or payload ->> 'profileId' = any(?))`, [[merged!.id], [merged!.id]])).toBe(0);
    expect(await rows(bystander, 'events')).toBe(5);
    const suppressed = (await h.db('privacy.suppressions').where({ org_id: org }).select('identifier_type', 'identifier_hash')) as Array<{ identifier_type: string; identifier_hash: string }>;
    expect(suppressed.map((r) => `${r.identifier_type}:${r.identifier_hash}`).sort()).toEqual(
      [
        `anonymous_id:${h.hashes.of(org, 'anonymous_id', 'anon-1')}`,
        `anonymous_id:${h.hashes.of(org, 'anonymous_id', 'anon-2')}`,
        `email:${h.hashes.of(org, 'email', 'one@example.com')}`,
        `user_id:${h.hashes.of(org, 'user_id', 'u-1')}`,
      ].sort(),
    );
    await h.waitFor('the tombstone', () => tombstones.some((m) => (m.value as ProfileErased).erasureId === recorded.erasure.id));
    const tombstone = tombstones.find((m) => (m.value as ProfileErased).erasureId === recorded.erasure.id)!;
    expect(tombstone.key).toBe(merged!.id);
    expect(tombstone.value).toMatchObject({ profileId: merged!.id, clickIds: [{ type: 'gclid', hash: expect.stringMatching(/^[0-9a-f]{64}$/) }] });

    // Delivered again (at-least-once): nothing happens a second time.
    const audit = await h.count('select count(*) as n from privacy.audit_log where org_id = ?', [org]);
    const again: ErasureRequest = { v: 1, orgId: org, erasureId: recorded.erasure.id, profileId: merged!.id, requestedAt: new Date().toISOString() };
    await createErasureHandler({ db: h.db, logger: h.logger, hashes: h.hashes })({ topic: h.topics.erasureRequests.name, partition: 0, messages: [{ topic: h.topics.erasureRequests.name, partition: 0, offset: '0', key: merged!.id, value: again, headers: {}, timestamp: new Date() }] });
    expect(await h.count('select count(*) as n from privacy.audit_log where org_id = ?', [org])).toBe(audit);
    expect(await h.count('select count(*) as n from privacy.erasure_outcomes where erasure_id = ?', [recorded.erasure.id])).toBe(1);

    // Any event carrying one of the person's identifiers is dropped before it is stored; the others are stored.
    const before = (await metrics.eventsSuppressed.get()).values[0]?.value ?? 0;
    const dropped = [
      h.envelope(org, { type: 'page', anonymousId: 'anon-1' }),
      h.envelope(org, { type: 'track', event: 'x', anonymousId: 'anon-new', userId: 'u-1' }),
      h.envelope(org, { type: 'track', event: 'x', anonymousId: 'anon-new-2', context: { traits: { email: 'ONE@example.com' } } }),
      h.envelope(org, { type: 'alias', anonymousId: 'anon-new-3', userId: 'u-new', previousId: 'u-1' }),
    ];
    const kept = [h.envelope(org, { type: 'page', anonymousId: 'anon-3' }), h.envelope(bystander, { type: 'page', anonymousId: 'anon-1', userId: 'u-1' })];
    await h.produce([...dropped, ...kept]);
    await h.waitForStored(org, [kept[0]!.event.messageId]);
    await h.waitForStored(bystander, [kept[1]!.event.messageId]);
    await h.waitFor('four events suppressed', async () => ((await metrics.eventsSuppressed.get()).values[0]?.value ?? 0) - before === 4);
    expect(await h.count('select count(*) as n from identity.events where org_id = ? and message_id = any(?)', [org, dropped.map((e) => e.event.messageId)])).toBe(0);
  }, 60_000);

  it('erases a person whose events keep arriving on several partitions meanwhile: each is erased with them or dropped, none survives', async () => {
    const org = await h.org('Busy');
    const suppressedBefore = (await metrics.eventsSuppressed.get()).values[0]?.value ?? 0;
    const second = await h.startResolver({ groupId: 'identity-resolver' });
    const [first] = await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'busy-0', userId: 'busy-user', traits: { email: 'busy@example.com' } })]);
    expect(first).toBeDefined();
    const recorded = await requestErasure(h.db, { orgId: org, target: { kind: 'user_id', value: 'busy-user' }, actor: 'test', hashes: h.hashes });
    if (recorded.outcome !== 'recorded') throw new Error(`not recorded: ${recorded.outcome}`);
    // The person's events on eight devices (so on different partitions), before, during and after the erasure.
    const stream = Array.from({ length: 240 }, (_, i) =>
      h.envelope(org, { type: 'track', event: 'tick', anonymousId: `busy-${i % 8}`, ...(i % 3 === 0 ? { userId: 'busy-user' } : { context: { traits: { email: 'busy@example.com' } } }) }),
    );
    const producing = (async () => {
      for (let i = 0; i < stream.length; i += 20) {
        await h.produce(stream.slice(i, i + 20));
        if (i === 100) await publishPendingErasures(h.db, h.bus, h.topics.erasureRequests);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    await producing;
    await h.waitFor('the erasure done', async () => (await getErasure(h.db, org, recorded.erasure.id))?.status === 'done', 30_000);
    // Every one of the person's events was either stored and then erased with them, or dropped as suppressed.
    const { counts } = (await h.db('privacy.erasure_outcomes').where({ erasure_id: recorded.erasure.id }).first('counts')) as { counts: { events: number } };
    const suppressed = async () => ((await metrics.eventsSuppressed.get()).values[0]?.value ?? 0) + ((await second.metrics.eventsSuppressed.get()).values[0]?.value ?? 0) - suppressedBefore;
    await h.waitFor('every event erased or dropped', async () => counts.events + (await suppressed()) === stream.length + 1, 30_000);
    expect(counts.events).toBeGreaterThan(0);
    expect(await suppressed()).toBeGreaterThan(0);
    const marker = h.envelope(org, { type: 'page', anonymousId: 'someone-else' });
    await h.ingest([marker]);
    expect(await h.count(`select count(*) as n from identity.events where org_id = ? and anonymous_id like 'busy-%'`, [org])).toBe(0);
    expect(await h.count(`select count(*) as n from identity.identity_signals where org_id = ? and (signal_value like 'busy%')`, [org])).toBe(0);
    expect(await h.count('select count(*) as n from identity.profiles where org_id = ? and id <> (select profile_id from identity.events where message_id = ?)', [org, marker.event.messageId])).toBe(0);
    await second.stop();
  }, 90_000);

  it('records a failed outcome, with its reason, when the profile is gone', async () => {
    const org = await h.org('Gone');
    const erasureId = randomUUID();
    const profileId = randomUUID();
    await h.db('privacy.erasure_requests').insert({ id: erasureId, org_id: org, target_kind: 'profile', profile_id: profileId, canonical_id: 'prf_gone', scope: ['profiles'], actor: 'test' });
    await publishPendingErasures(h.db, h.bus, h.topics.erasureRequests);
    await h.waitFor('the erasure failed', async () => (await getErasure(h.db, org, erasureId))?.status === 'failed');
    expect(await getErasure(h.db, org, erasureId)).toMatchObject({ status: 'failed', failure_reason: 'the profile no longer exists', profiles_erased: null });
    expect(await h.db('privacy.audit_log').where({ erasure_id: erasureId }).select('action')).toEqual([{ action: 'erasure_failed' }]);
  });
});
