import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { RawEventEnvelope } from '@svc/contracts';
import { describeWithPostgres } from '@svc/testkit';
import { DataKeyReader, MasterKeyMissingError, MasterKeyRing, OUTBOX_INSERT, adminMergeProfiles, outboxRecords, profileChange, setEngagementRules } from '@svc/identity';
import type { ReplayReport } from './replay';
import { Harness, minutesAgo } from './test-support/harness';
import { replayHarnessLog } from './test-support/replay-log';

/**
 * Replay on real parts: a mixed workload goes through the running resolver,
 * then the projections are rebuilt from the log into fresh tables while the
 * resolver keeps running, and must come out the same.
 */
describeWithPostgres('replaying the raw log into fresh projections', () => {
  const h = new Harness();
  let org: string;
  let before: Snapshot;
  let report: ReplayReport;
  let usageBefore: unknown[];
  let sent: RawEventEnvelope[];

  beforeAll(async () => {
    await h.setUp();
    await h.startResolver();
    org = await h.org();
    sent = workload(h, org);
    await h.ingest(sent);
    // Decisions that are not in the log: an admin merge, engagement rules. (Exhausted clicks are the
    // forwarder's, in its own schema: nothing of a replay's.)
    const a = await h.profileBySignal(org, 'anonymous_id', 'lonely-1');
    const b = await h.profileBySignal(org, 'anonymous_id', 'lonely-2');
    await adminMergeProfiles(h.db, { orgId: org, source: a!.id, target: b!.id, actor: 'admin-key', note: 'same person' });
    await setEngagementRules(h.db, org, { version: 1, rules: [{ event: 'purchase', points: 10 }] });
    await h.waitFor('every output relayed', async () => (await h.count('select count(*) as n from identity.outbox', [])) === 0);
    before = await snapshot(h, 'identity', org);
    usageBefore = await h.db('accounts.monthly_usage').orderBy(['org_id', 'month']);

    report = await replayHarnessLog(h, 'test', { maxBatchSize: 37 });
  }, 120_000);
  afterAll(() => h.tearDown());

  it('rebuilds identical profiles, identities, events, click IDs and sessions, and keeps the old tables aside', async () => {
    expect(report).toMatchObject({ previousSchema: 'identity_before_replay_test', skipped: 0, adminMerges: 1 });
    expect(report.events).toBeGreaterThanOrEqual(before.events.length);
    const after = await snapshot(h, 'identity', org);
    expect(after.events).toHaveLength(sent.length);
    expect(after).toEqual(before);
    // The old tables are untouched, in the schema the report names.
    expect(await snapshot(h, report.previousSchema, org)).toEqual(before);
  });

  it('carries over what the log does not hold: engagement rules, admin merges', async () => {
    expect(await h.db('identity.engagement_rules').where({ org_id: org }).first()).toMatchObject({ rules: { version: 1 } });
    const admin = await h.db('identity.merges').where({ org_id: org, reason: 'admin' });
    expect(admin).toEqual([expect.objectContaining({ actor: 'admin-key', note: 'same person' })]);
  });

  it('counts no usage twice and publishes nothing', async () => {
    expect(await h.db('accounts.monthly_usage').orderBy(['org_id', 'month'])).toEqual(usageBefore);
    expect(await h.count('select count(*) as n from identity.outbox', [])).toBe(0);
  });

  it('stops, changing nothing, when it cannot unwrap the log\'s keys (another master key): it never rebuilds without those events', async () => {
    const profiles = await h.count('select count(*) as n from identity.profiles where org_id = ?', [org]);
    const replay = replayHarnessLog(h, 'wrong_key', { keys: new DataKeyReader(h.db, new MasterKeyRing(randomBytes(32))) });
    await expect(replay).rejects.toThrow(MasterKeyMissingError);
    expect(await h.count('select count(*) as n from identity.profiles where org_id = ?', [org])).toBe(profiles);
    expect(await h.count(`select count(*) as n from pg_namespace where nspname = 'identity_before_replay_wrong_key'`, [])).toBe(0);
  });

  it('keeps the running resolver working, now on the new tables', async () => {
    const [id] = await h.ingest([h.envelope(org, { type: 'track', event: 'after_replay', anonymousId: 'lonely-2' })]);
    expect((await h.event(org, id!)).event_name).toBe('after_replay');
    expect(await h.count(`select count(*) as n from ${report.previousSchema}.events where message_id = ?`, [id])).toBe(0);
  });
});

/** Several kinds of visitor, in an order that exercises every resolution rule. */
function workload(h: Harness, org: string): RawEventEnvelope[] {
  const out: RawEventEnvelope[] = [];
  const at = (m: number) => minutesAgo(m);
  const campaign = (i: number) => ({ source: i % 2 ? 'google' : 'newsletter', medium: i % 2 ? 'cpc' : 'email', name: `c${i % 3}`, ...(i === 1 ? { gclid: 'gclid-1' } : {}), ...(i === 4 ? { fbclid: 'fb-4' } : {}) });
  for (let i = 0; i < 8; i++) {
    const anon = `visitor-${i}`;
    out.push(h.envelope(org, { type: 'page', anonymousId: anon, timestamp: at(100 - i), properties: { path: '/' }, context: { campaign: campaign(i), session: { id: `s-${i}` } } }));
    out.push(h.envelope(org, { type: 'track', event: 'viewed_item', anonymousId: anon, timestamp: at(90 - i), properties: { sku: `sku-${i}` }, context: { session: { id: `s-${i}` } } }));
    if (i % 2 === 0) {
      out.push(h.envelope(org, { type: 'identify', anonymousId: anon, userId: `user-${i}`, timestamp: at(80 - i), traits: { email: `User${i}@Example.com`, phone: `98765 4321${i}` } }));
      out.push(h.envelope(org, { type: 'track', event: 'purchase', anonymousId: anon, userId: `user-${i}`, timestamp: at(70 - i), properties: { value: 10 + i, order_id: `o-${i}` } }));
    }
    out.push(h.envelope(org, { type: 'screen', anonymousId: anon, timestamp: at(60 - i), properties: { name: 'Home' } }));
  }
  // The same user on a second device; a trait match by email; an alias; a group; a late event older than the first touch.
  out.push(h.envelope(org, { type: 'identify', anonymousId: 'phone-of-user-0', userId: 'user-0', timestamp: at(50) }));
  out.push(h.envelope(org, { type: 'track', event: 'lead', anonymousId: 'tablet-2', timestamp: at(49), traits: { email: 'user2@example.com' } }));
  out.push(h.envelope(org, { type: 'alias', anonymousId: 'visitor-1', userId: 'user-1', previousId: 'visitor-3', timestamp: at(48) }));
  out.push(h.envelope(org, { type: 'group', anonymousId: 'visitor-5', groupId: 'acme', timestamp: at(47), traits: { name: 'Acme' } }));
  out.push(h.envelope(org, { type: 'page', anonymousId: 'visitor-6', timestamp: at(500), context: { campaign: { source: 'early', medium: 'referral' } } }));
  out.push(h.envelope(org, { type: 'page', anonymousId: 'lonely-1', timestamp: at(40) }));
  out.push(h.envelope(org, { type: 'page', anonymousId: 'lonely-2', timestamp: at(39) }));
  return out;
}

interface Snapshot {
  profiles: unknown[];
  signals: unknown[];
  events: unknown[];
  clicks: unknown[];
  sessions: unknown[];
}

/**
 * The projections of one organisation, with every profile reference written
 * as the set of signals of the profile it resolves to: which of two racing
 * profiles survives a merge may differ between runs, what belongs together
 * may not.
 */
async function snapshot(h: Harness, schema: string, org: string): Promise<Snapshot> {
  const q = async <T>(sql: string): Promise<T[]> => (await h.db.raw(sql.replaceAll('S.', `${schema}.`), [org])).rows as T[];
  const owner = new Map<string, string>();
  for (const s of await q<{ profile_id: string; signal_type: string; signal_value: string }>(
    'select profile_id, signal_type, signal_value from S.identity_signals where org_id = ? order by signal_type, signal_value',
  )) {
    owner.set(s.profile_id, [owner.get(s.profile_id), `${s.signal_type}:${s.signal_value}`].filter(Boolean).join(' '));
  }
  const live = await q<{ id: string; merged_into: string | null }>('select id, merged_into from S.profiles where org_id = ?');
  const cluster = (id: string) => owner.get(live.find((p) => p.id === id)?.merged_into ?? id) ?? `?${id}`;
  /** The rows `sql` selects, sorted, their `profile_id` replaced by the cluster it resolves to. */
  const clustered = async (sql: string) =>
    (await q<Record<string, unknown> & { profile_id: string }>(sql))
      .map(({ profile_id, ...rest }) => ({ cluster: cluster(profile_id), ...rest }))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return {
    profiles: await clustered(
      `select id as profile_id, user_id, identified, traits, first_seen_at, last_seen_at, event_count, session_count,
              round(engagement_score::numeric, 6) as engagement_score, first_touch, last_touch
       from S.profiles where org_id = ? and merged_into is null`,
    ),
    signals: await clustered(
      'select profile_id, signal_type, signal_value, confidence, first_seen_at, last_seen_at, occurrence_count from S.identity_signals where org_id = ?',
    ),
    events: await clustered(
      'select id, message_id, profile_id, event_name, event_timestamp, properties, context, resolution_method from S.events where org_id = ?',
    ),
    clicks: await clustered(
      'select click_type, click_id, profile_id, campaign_source, campaign_medium, first_seen_at, last_seen_at from S.click_ids where org_id = ?',
    ),
    sessions: await clustered('select * from S.profile_sessions where org_id = ?'),
  };
}

/**
 * Issue 30: a replay while the live resolver lags (here: stopped) and events,
 * conversions included, keep arriving. What the resolver had not reached is
 * stored by the replay with its outputs and usage; what arrives during the
 * replay is the live path's; nothing is published twice or never.
 */
describeWithPostgres('a replay ahead of a lagging resolver hands over without swallowing its work', () => {
  const h = new Harness();
  afterAll(() => h.tearDown());

  it('gives every event its events.resolved, conversion candidate, profile change and usage exactly once', async () => {
    await h.setUp();
    const resolved = await h.collect(h.topics.eventsResolved);
    const candidates = await h.collect(h.topics.conversionsCandidates);
    const changes = await h.collect(h.topics.profilesChanges);
    const org = await h.org();
    const purchase = (anonymousId: string, n: number) =>
      h.envelope(org, { type: 'track', event: 'purchase', anonymousId, timestamp: minutesAgo(30 - n), properties: { value: n, currency: 'EUR', order_id: `o-${anonymousId}-${n}` }, context: { campaign: { gclid: `g-${anonymousId}` } } });
    const page = (anonymousId: string, n: number) => h.envelope(org, { type: 'page', anonymousId, timestamp: minutesAgo(30 - n) });

    // Stored by the live path before it stops.
    const first = await h.startResolver();
    const stored = [page('known-1', 1), purchase('known-1', 2), page('known-2', 3)];
    await h.ingest(stored);
    await h.waitFor('the first outputs relayed', async () => (await h.count('select count(*) as n from identity.outbox', [])) === 0);
    await first.stop();
    // What the live path committed but had not relayed when the replay began (its relay stopped with it).
    const pending = randomUUID();
    await h.db.raw(OUTBOX_INSERT, [outboxRecords([profileChange(org, pending, 'updated')])]);

    // The resolver lags: these reach the log only.
    const behind = [page('known-1', 4), purchase('known-2', 5), page('new-1', 6), purchase('new-1', 7), h.envelope(org, { type: 'identify', anonymousId: 'new-2', userId: 'u-new-2', timestamp: minutesAgo(22) })];
    await h.produce(behind);

    // And these arrive while the replay runs.
    const replay = replayHarnessLog(h, 'handover', { maxBatchSize: 3 });
    const during = [purchase('new-3', 8), page('known-2', 9)];
    await h.produce(during);
    const report = await replay;
    expect(report).toMatchObject({ skipped: 0, suppressed: 0, erased: 0 });
    // Everything behind the resolver, and whatever of `during` the replay's read reached.
    expect(report.caughtUp).toBeGreaterThanOrEqual(behind.length);
    expect(report.caughtUp).toBeLessThanOrEqual(behind.length + during.length);

    // The pending row moved into the new outbox, to be sent.
    expect(await h.count(`select count(*) as n from identity.outbox where message_key = ?`, [pending])).toBe(1);

    // The live path resumes where it stopped.
    await h.startResolver();
    const all = [...stored, ...behind, ...during];
    await h.waitForStored(org, all.map((e) => e.event.messageId));
    await h.waitFor('every output relayed', async () => (await h.count('select count(*) as n from identity.outbox', [])) === 0);
    await h.waitFor('every event resolved', () => new Set(resolved.map((m) => m.value.messageId)).size >= all.length);
    // Late duplicates would come within the relay's next rounds.
    await new Promise((r) => setTimeout(r, 1_000));

    const times = (messages: typeof resolved, id: string) => messages.filter((m) => m.value.messageId === id).length;
    for (const e of all) expect([e.event.messageId, times(resolved, e.event.messageId)]).toEqual([e.event.messageId, 1]);
    const purchases = all.filter((e) => e.event.event === 'purchase');
    for (const e of purchases) expect([e.event.messageId, times(candidates, e.event.messageId)]).toEqual([e.event.messageId, 1]);
    expect(candidates).toHaveLength(purchases.length);
    // A profile first seen behind the resolver was announced, once as created.
    for (const visitor of ['new-1', 'new-2', 'new-3']) {
      const profile = await h.profileBySignal(org, 'anonymous_id', visitor);
      expect([visitor, changes.filter((m) => m.value.profileId === profile!.id && m.value.change === 'created').length]).toEqual([visitor, 1]);
    }
    expect(changes.filter((m) => m.value.profileId === pending)).toHaveLength(1);
    // Usage counted once per event.
    const usage = await h.db('accounts.monthly_usage').where({ org_id: org }).sum<Array<{ n: string }>>({ n: 'unique_events' });
    expect(Number(usage[0]?.n)).toBe(all.length);
  }, 120_000);
});
