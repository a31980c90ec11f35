import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { DEFAULT_IDENTITY_RULES, identityMigrations, pendingRestatements, queuePhoneRestatement, readWarnings, setIdentityRules } from '@svc/identity';
import { runMigrations } from '@svc/runtime';
import { describeWithPostgres } from '@svc/testkit';
import type { ResolverMetrics } from './metrics';
import { RESTATEMENT_ACTOR, startRestatingPhones } from './phone-restatement';
import { Harness } from './test-support/harness';

/**
 * Stored phone signals read again (issue 32's migration): a database whose
 * numbers were stored by the hand-written reading that came before
 * libphonenumber (a national number of eleven digits starting with 0 was
 * taken as the deployment's country: `020 7946 0958` as `+12079460958`) is
 * brought to today's reading by migration 0014 and the resolver: the stale
 * numbers go, the right ones are attached, and profiles that now share a
 * number merge by the ordinary rules, journaled.
 */
describeWithPostgres('phone signals restated by the resolver', () => {
  const h = new Harness();
  let org: string;
  let metrics: ResolverMetrics;
  const phones = async () =>
    (await h.db('identity.identity_signals').where({ org_id: org, signal_type: 'phone' }).orderBy('signal_value').select('signal_value', 'profile_id', 'occurrence_count')) as Array<{
      signal_value: string;
      profile_id: string;
      occurrence_count: number;
    }>;
  const profileOf = async (anonymousId: string) => (await h.profileBySignal(org, 'anonymous_id', anonymousId))!.id;
  const userProfile = async (userId: string) => (await h.profileBySignal(org, 'user_id', userId))!.id;
  /** Rewrites a number as the reading before libphonenumber had stored it. */
  const storedTheOldWay = (right: string, old: string) =>
    h.db('identity.identity_signals').where({ org_id: org, signal_type: 'phone', signal_value: right }).update({ signal_value: old });
  const restate = async () => {
    const restating = startRestatingPhones({ db: h.db, logger: h.logger, metrics, options: { chunkSize: 2 }, intervalMs: 60_000 });
    await restating.pass();
    await restating.stop();
  };
  let before: Record<string, string>;

  beforeAll(async () => {
    await h.setUp();
    metrics = (await h.startResolver()).metrics;
    org = await h.org();
    await setIdentityRules(h.db, org, { ...DEFAULT_IDENTITY_RULES, phone: { default_region: 'GB' } });
    // A visitor gave a British national number; the old reading stored it as an American one.
    await h.ingest([
      h.envelope(org, { type: 'identify', anonymousId: 'national', traits: { phone: '020 7946 0958' }, messageId: 'm-national' }, new Date(Date.now() - 2_000)),
      h.envelope(org, { type: 'identify', anonymousId: 'national', traits: { phone: '020 7946 0958' }, messageId: 'm-national-again' }, new Date(Date.now() - 1_000)),
      h.envelope(org, { type: 'identify', userId: 'alice', anonymousId: 'alice-device', traits: { phone: '020 7946 0000' } }),
      // Eleven digits without a prefix: the old reading took them as international (country code 999); today they are no number.
      h.envelope(org, { type: 'identify', anonymousId: 'junk', traits: { phone: '99912345678' } }),
    ]);
    await storedTheOldWay('+442079460958', '+12079460958');
    await storedTheOldWay('+442079460000', '+12079460000');
    await h.db('identity.identity_signals').insert({
      org_id: org, signal_type: 'phone', signal_value: '+99912345678', profile_id: await profileOf('junk'), confidence: 0.8, first_seen_at: new Date(), last_seen_at: new Date(),
    });
    // The same numbers written internationally, after: on profiles of their own, as the stale numbers did not match them.
    await h.ingest([
      h.envelope(org, { type: 'identify', anonymousId: 'international', traits: { phone: '+44 20 7946 0958' } }),
      h.envelope(org, { type: 'identify', userId: 'bob', anonymousId: 'bob-device', traits: { phone: '+44 20 7946 0000' } }),
      // A number in the event's context's traits counts as the event's.
      h.envelope(org, { type: 'track', event: 'Viewed', anonymousId: 'context', context: { traits: { phone: '+44 20 7946 1111' } } }),
    ]);
    expect((await phones()).map((p) => p.signal_value)).toEqual(['+12079460000', '+12079460958', '+442079460000', '+442079460958', '+442079461111', '+99912345678']);
    before = {};
    for (const anonymousId of ['national', 'international', 'junk', 'context']) before[anonymousId] = await profileOf(anonymousId);
    expect(before.national).not.toBe(before.international);

    // What an upgrade runs: migration 0014 queues every organisation's profiles with phones.
    await h.db.raw('drop table identity.phone_restatements');
    await h.db('identity.knex_migrations').where({ name: '0014_phone_restatement' }).del();
    await runMigrations(h.db, [identityMigrations]);
  }, 60_000);
  afterAll(() => h.tearDown());

  it('the migration queues each profile with a phone, once per step', async () => {
    const queued = await h.db('identity.phone_restatements').where({ org_id: org }).select('step').count('* as n').groupBy('step').orderBy('step');
    // Step 1: the six profiles holding a number (the context one too); step 2: the six whose events carry one.
    expect(queued).toEqual([{ step: 1, n: 6 }, { step: 2, n: 6 }]);
  });

  it('drops the stale numbers, attaches the right ones, and merges the visitor who shares one', async () => {
    await restate();
    expect(await pendingRestatements(h.db)).toBe(0);
    const person = await profileOf('national');
    expect(await profileOf('international')).toBe(person);
    expect(person).toBe(before.international);
    const held = await phones();
    expect(held.map((p) => p.signal_value)).toEqual(['+442079460000', '+442079460958', '+442079461111']);
    // Counted over the merged profile's events: the international one, and the national one twice.
    expect(held.find((p) => p.signal_value === '+442079460958')).toMatchObject({ profile_id: person, occurrence_count: 3 });
    expect(held.find((p) => p.signal_value === '+442079461111')).toMatchObject({ profile_id: before.context });
    // Two identified people never merge: the number stays with bob, alice holds none.
    expect(held.find((p) => p.signal_value === '+442079460000')).toMatchObject({ profile_id: await userProfile('bob') });
    expect(await userProfile('alice')).not.toBe(await userProfile('bob'));
  });

  it('journals the merge with the event that carried the number and the restatement as actor, and tells profiles.changes', async () => {
    const journal = await h.db('identity.merges').where({ org_id: org }).select('source_profile_id', 'target_profile_id', 'reason', 'signal_type', 'actor', 'message_id');
    expect(journal).toEqual([
      {
        source_profile_id: before.national,
        target_profile_id: before.international,
        reason: 'trait',
        signal_type: 'anonymous_id',
        actor: RESTATEMENT_ACTOR,
        message_id: 'm-national',
      },
    ]);
    const changes = await h.collect(h.topics.profilesChanges);
    await h.waitFor('the merge on profiles.changes', () => changes.some((m) => m.value.change === 'merged' && m.value.profileId === before.national));
    expect((await metrics.phoneRestatements.get()).values.map((v) => [v.labels.step, v.value])).toEqual([['1', 6], ['2', 6]]);
    expect((await readWarnings(h.db, org, { limit: 10 })).warnings).toEqual([expect.objectContaining({ kind: 'unreadable_phone' })]);
  });

  it('is idempotent: queued again, nothing changes', async () => {
    const held = await phones();
    expect(await queuePhoneRestatement(h.db, org)).toBe(8);
    await restate();
    expect(await phones()).toEqual(held);
    expect(await h.db('identity.merges').where({ org_id: org }).count('* as n')).toEqual([{ n: 1 }]);
  });
});
