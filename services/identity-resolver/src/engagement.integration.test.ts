import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { IncomingMessage } from '@svc/bus';
import { checkEngagementRules, type RawEventEnvelope } from '@svc/contracts';
import { describeWithPostgres } from '@svc/testkit';
import { adminMergeProfiles, currentEngagementScore, decayScore, engagementHalfLifeDays, getEngagementRules, setEngagementRules } from '@svc/identity';
import { createResolverHandler } from './resolver';
import { Harness, minutesAgo, type ProfileRow } from './test-support/harness';

const DAY = 24 * 60;
const DAY_MS = 86_400_000;

/** Engagement rules on real parts: rules stored as svcctl stores them, events through the running resolver. */
describeWithPostgres('engagement scoring on PostgreSQL', () => {
  const h = new Harness();
  beforeAll(async () => {
    await h.setUp();
    await h.startResolver();
  });
  afterAll(() => h.tearDown());

  const setRules = async (org: string, doc: unknown) => {
    const check = checkEngagementRules(doc);
    if (!check.ok) throw new Error(JSON.stringify(check.problems));
    return setEngagementRules(h.db, org, check.rules);
  };
  const need = async (org: string, type: string, value: string): Promise<ProfileRow> => {
    const p = await h.profileBySignal(org, type, value);
    if (!p) throw new Error(`no profile has ${type} ${value}`);
    return p;
  };
  const redeliver = async (org: string, batch: readonly RawEventEnvelope[]) => {
    const handler = createResolverHandler({ db: h.db, bus: h.bus, topics: h.topics, logger: h.logger, keys: h.keyReader(), batch: { hashes: h.hashes } });
    const messages = batch.map((value, i): IncomingMessage<RawEventEnvelope> => ({
      topic: h.topics.eventsRaw.name,
      partition: 0,
      offset: String(i),
      key: `${org}:${value.event.anonymousId}`,
      value,
      headers: {},
      timestamp: new Date(),
    }));
    await handler({ topic: h.topics.eventsRaw.name, partition: 0, messages });
  };

  const RULES = {
    version: 1,
    rules: [
      { event: 'purchase', points: 10 },
      { event: 'purchase', points: 5, where: [{ property: 'plan', op: 'eq', value: 'pro' }] },
      { event: 'purchase', points: 20, where: [{ property: 'cart.total', op: 'gte', value: 100 }] },
      { event: '$pageview', points: 1, where: [{ property: 'path', op: 'eq', value: '/pricing' }] },
      { event: 'unsubscribe', points: -4 },
    ],
  };

  it('without rules nothing earns points, as before', async () => {
    const org = await h.org();
    expect(await getEngagementRules(h.db, org)).toEqual({ orgId: org, configured: false, rules: { version: 1, rules: [], decay: null }, updatedAt: null });
    await h.ingest([h.envelope(org, { type: 'track', event: 'purchase', anonymousId: 'n1', properties: { plan: 'pro' }, timestamp: minutesAgo(5) })]);
    expect(await need(org, 'anonymous_id', 'n1')).toMatchObject({ event_count: 1, engagement_score: 0, engagement_updated_at: null });
  });

  it('adds the points of every matching rule, exactly once under redelivery', async () => {
    const org = await h.org();
    const stored = await setRules(org, RULES);
    expect(stored).toMatchObject({ orgId: org, configured: true, rules: { version: 1, decay: null } });
    expect(await engagementHalfLifeDays(h.db, org)).toBeNull();

    const batch = [
      h.envelope(org, { type: 'page', anonymousId: 'e1', properties: { path: '/pricing' }, timestamp: minutesAgo(10) }),
      h.envelope(org, { type: 'page', anonymousId: 'e1', properties: { path: '/' }, timestamp: minutesAgo(9) }),
      h.envelope(org, { type: 'track', event: 'purchase', anonymousId: 'e1', properties: { plan: 'pro', cart: { total: 120 } }, timestamp: minutesAgo(8) }),
      h.envelope(org, { type: 'track', event: 'purchase', anonymousId: 'e1', properties: { plan: 'free', cart: { total: '99.99' } }, timestamp: minutesAgo(7) }),
      h.envelope(org, { type: 'track', event: 'Purchase', anonymousId: 'e1', timestamp: minutesAgo(6) }),
      h.envelope(org, { type: 'track', event: 'unsubscribe', anonymousId: 'e1', timestamp: minutesAgo(5) }),
    ];
    await h.ingest(batch);
    const expected = 1 + 0 + (10 + 5 + 20) + 10 + 0 - 4;
    const before = await need(org, 'anonymous_id', 'e1');
    expect(before).toMatchObject({ event_count: 6, engagement_score: expected });
    // The instant the score is as of: the latest scored event.
    expect(before.engagement_updated_at).toEqual(new Date(batch[5]!.event.timestamp));

    // The same batch again through the handler (a bus redelivery), and produced to the log again (a gateway retry).
    await redeliver(org, batch);
    await redeliver(org, [batch[2]!, batch[2]!]);
    await h.produce(batch);
    await h.ingest([h.envelope(org, { type: 'track', event: 'other', anonymousId: 'e1', timestamp: minutesAgo(1) })]);
    expect(await need(org, 'anonymous_id', 'e1')).toMatchObject({ event_count: 7, engagement_score: expected, engagement_updated_at: before.engagement_updated_at });
  });

  it('rule changes apply to events stored after the change, not before', async () => {
    const org = await h.org();
    await setRules(org, { version: 1, rules: [{ event: 'signup', points: 3 }] });
    await h.ingest([h.envelope(org, { type: 'track', event: 'signup', anonymousId: 'c1', timestamp: minutesAgo(10) })]);
    const first = await setRules(org, { version: 1, rules: [{ event: 'signup', points: 100 }, { event: 'login', points: 2 }] });
    expect(first.rules.rules).toEqual([{ event: 'signup', points: 100, where: [] }, { event: 'login', points: 2, where: [] }]);
    await h.ingest([h.envelope(org, { type: 'track', event: 'login', anonymousId: 'c1', timestamp: minutesAgo(9) })]);
    expect(await need(org, 'anonymous_id', 'c1')).toMatchObject({ engagement_score: 3 + 2 });
  });

  it('decays by event time: late events count as old, reads decay to now', async () => {
    const org = await h.org();
    await setRules(org, { version: 1, rules: [{ event: 'visit', points: 10 }, { event: 'buy', points: 4 }], decay: { half_life_days: 10 } });
    expect(await engagementHalfLifeDays(h.db, org)).toBe(10);
    const t2 = minutesAgo(10 * DAY);
    const daysBefore = (t: string, days: number) => new Date(Date.parse(t) - days * DAY_MS).toISOString();
    const t1 = daysBefore(t2, 10);
    await h.ingest([h.envelope(org, { type: 'track', event: 'visit', anonymousId: 'd1', timestamp: t1 })]);
    await h.ingest([h.envelope(org, { type: 'track', event: 'buy', anonymousId: 'd1', timestamp: t2 })]);
    let p = await need(org, 'anonymous_id', 'd1');
    // As of t2: 10 decayed over one half-life, plus 4.
    expect(p.engagement_updated_at).toEqual(new Date(t2));
    expect(p.engagement_score).toBeCloseTo(10 / 2 + 4, 9);

    // A late event, older than the score's instant, adds its points decayed to that instant; the instant stays.
    await h.ingest([h.envelope(org, { type: 'track', event: 'visit', anonymousId: 'd1', timestamp: daysBefore(t2, 20) })]);
    p = await need(org, 'anonymous_id', 'd1');
    expect(p.engagement_updated_at).toEqual(new Date(t2));
    expect(p.engagement_score).toBeCloseTo(10 / 2 + 4 + 10 / 4, 9);

    // Read: decayed from t2 to now (one half-life later), whatever the stored value is as of.
    const now = new Date(Date.parse(t2) + 10 * DAY_MS);
    expect(await currentEngagementScore(h.db, org, p.id, now)).toBeCloseTo((10 / 2 + 4 + 10 / 4) / 2, 9);
    expect(await currentEngagementScore(h.db, org, p.id, new Date(t2))).toBeCloseTo(11.5, 9);
    expect(await currentEngagementScore(h.db, org, '00000000-0000-4000-8000-000000000000')).toBeUndefined();

    // A timestamp ahead of the gateway's clock scores at the arrival time.
    const received = new Date();
    const ahead = h.envelope(org, { type: 'track', event: 'buy', anonymousId: 'd1', timestamp: new Date(received.getTime() + 4 * 60_000).toISOString() }, received);
    await h.ingest([ahead]);
    p = await need(org, 'anonymous_id', 'd1');
    expect(p.engagement_updated_at).toEqual(received);
    expect(p.engagement_score).toBeCloseTo(decayScore(11.5, Date.parse(t2), received.getTime(), 10) + 4, 9);
  });

  it('merges decay both scores to the same instant before adding them', async () => {
    const org = await h.org();
    await setRules(org, { version: 1, rules: [{ event: 'visit', points: 8 }], decay: { half_life_days: 5 } });
    const tb = minutesAgo(5 * DAY);
    const ta = new Date(Date.parse(tb) - 10 * DAY_MS).toISOString();
    await h.ingest([
      h.envelope(org, { type: 'identify', anonymousId: 'ma', userId: 'amy', timestamp: minutesAgo(16 * DAY) }),
      h.envelope(org, { type: 'track', event: 'visit', anonymousId: 'ma', timestamp: ta }),
    ]);
    await h.ingest([
      h.envelope(org, { type: 'identify', anonymousId: 'mb', userId: 'bob', timestamp: minutesAgo(6 * DAY) }),
      h.envelope(org, { type: 'track', event: 'visit', anonymousId: 'mb', timestamp: tb }),
    ]);
    const amy = await need(org, 'user_id', 'amy');
    const bob = await need(org, 'user_id', 'bob');
    expect([amy.engagement_score, bob.engagement_score]).toEqual([8, 8]);

    await adminMergeProfiles(h.db, { orgId: org, source: amy.id, target: bob.id, actor: 'admin' });
    const merged = await need(org, 'user_id', 'amy');
    expect(merged.id).toBe(bob.id);
    // Amy's 8 as of ta is worth 8·2^-2 at tb (two half-lives later).
    expect(merged.engagement_updated_at).toEqual(new Date(tb));
    expect(merged.engagement_score).toBeCloseTo(8 + 8 / 4, 9);
    // The source keeps its own frozen values.
    expect(await h.db('identity.profiles').where({ id: amy.id }).first()).toMatchObject({ merged_into: bob.id, engagement_score: 8 });

    // A resolver merge (an anonymous visitor identifies) in the batch that also scores: the same sum.
    const tc = minutesAgo(10 * DAY);
    await h.ingest([h.envelope(org, { type: 'track', event: 'visit', anonymousId: 'mc', timestamp: tc })]);
    const td = minutesAgo(1 * DAY);
    await h.ingest([
      h.envelope(org, { type: 'identify', anonymousId: 'mc', userId: 'bob', timestamp: minutesAgo(2 * DAY) }),
      h.envelope(org, { type: 'track', event: 'visit', anonymousId: 'mc', userId: 'bob', timestamp: td }),
    ]);
    const all = await need(org, 'user_id', 'bob');
    expect(await h.liveProfiles(org)).toHaveLength(1);
    const h5 = (from: string, to: string) => 2 ** -((Date.parse(to) - Date.parse(from)) / (5 * DAY_MS));
    expect(all.engagement_updated_at).toEqual(new Date(td));
    expect(all.engagement_score).toBeCloseTo(8 * h5(ta, td) + 8 * h5(tb, td) + 8 * h5(tc, td) + 8, 9);
  });

  it('stored rules that fail the check (written around svcctl) score nothing and hold nothing up', async () => {
    const org = await h.org();
    await h.db.raw(`insert into identity.engagement_rules (org_id, rules) values (?, '{"version": 1, "rules": "all"}')`, [org]);
    await h.ingest([h.envelope(org, { type: 'track', event: 'purchase', anonymousId: 'x1', timestamp: minutesAgo(1) })]);
    expect(await need(org, 'anonymous_id', 'x1')).toMatchObject({ event_count: 1, engagement_score: 0 });
    expect(await getEngagementRules(h.db, org)).toMatchObject({ configured: true, rules: { version: 1, rules: 'all' } });
  });

  describe('the database refuses what is not a rules document', () => {
    it('rejects a non-object and another version', async () => {
      const org = await h.org();
      await expect(h.db.raw(`insert into identity.engagement_rules (org_id, rules) values (?, '[]')`, [org])).rejects.toThrow(/check constraint/);
      await expect(h.db.raw(`insert into identity.engagement_rules (org_id, rules) values (?, '{"version": 2, "rules": []}')`, [org])).rejects.toThrow(/check constraint/);
    });
  });
});
