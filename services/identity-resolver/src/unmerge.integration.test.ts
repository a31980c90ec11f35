import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readToEnd, type IncomingMessage } from '@svc/bus';
import type { RawLogMessage } from '@svc/contracts';
import { describeWithPostgres } from '@svc/testkit';
import { adminMergeProfiles, eraseProfile, findUnmerge, inTransactionWithRetry, keepApart, readWarnings, requestErasure, requestUnmerge, resolveProfileId, setEngagementRules } from '@svc/identity';
import type { Db } from '@svc/runtime';
import { replayProjections } from './replay';
import { Harness, minutesAgo } from './test-support/harness';
import { envelopeOf, startUnmerging } from './unmerge';

const BASE = Date.now();
const at = (minutes: number) => minutesAgo(minutes, BASE);
const granted = (hash: string) => ({ consent: true, fingerprint: { hash } });

/**
 * Five events of one person on two devices: the phone (S) is an anonymous
 * visitor with an email; ann signs in on the laptop (T); ann then signs in on
 * the phone, which merges the phone's profile into hers (the entry to undo);
 * the phone browses on; a tablet buys with the phone's email.
 */
function story(h: Harness, org: string) {
  return {
    before: [
      h.envelope(org, { type: 'identify', messageId: 'a-phone', anonymousId: 'phone', traits: { email: 'phone@example.com', plan: 'free' }, timestamp: at(60), context: { campaign: { source: 'phone-ad', gclid: 'G-p' }, session: { id: 's-p' }, ...granted('fp-p') } }),
      h.envelope(org, { type: 'identify', messageId: 'b-laptop', anonymousId: 'laptop', userId: 'ann', traits: { email: 'ann@example.com' }, timestamp: at(50), context: { campaign: { source: 'laptop-ad', fbclid: 'F-l' }, session: { id: 's-l' } } }),
    ],
    after: [
      h.envelope(org, { type: 'identify', messageId: 'c-signin', anonymousId: 'phone', userId: 'ann', timestamp: at(40), context: { session: { id: 's-p' } } }),
      h.envelope(org, { type: 'page', messageId: 'd-browse', anonymousId: 'phone', timestamp: at(30), context: { campaign: { source: 'phone-later' }, session: { id: 's-p2' }, ...granted('fp-p') } }),
      h.envelope(org, { type: 'track', event: 'purchase', messageId: 'e-buy', anonymousId: 'tablet', properties: { value: 5 }, timestamp: at(20), context: { traits: { email: 'phone@example.com' }, session: { id: 's-t' } } }),
    ],
  };
}

/** An organisation's projections with profile ids replaced by the identifiers each profile holds, to compare two organisations. */
async function snapshot(db: Db, org: string) {
  const q = async <T = { profile_id: string }>(sql: string): Promise<T[]> => (await db.raw(sql, [org])).rows as T[];
  const held = new Map<string, string>();
  for (const s of await q<{ profile_id: string; signal_type: string; signal_value: string }>('select profile_id, signal_type, signal_value from identity.identity_signals where org_id = ? order by 2, 3')) {
    held.set(s.profile_id, [held.get(s.profile_id), `${s.signal_type}:${s.signal_value}`].filter(Boolean).join(' '));
  }
  const label = (id: string) => held.get(id) ?? `?${id}`;
  const labelled = <T extends { profile_id: string }>(rows: T[]) =>
    rows.map(({ profile_id, ...rest }) => ({ profile: label(profile_id), ...rest })).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return {
    profiles: labelled(
      await q<{ profile_id: string }>(
        `select id as profile_id, user_id, traits, first_seen_at, last_seen_at, event_count, session_count,
                round(engagement_score::numeric, 6) as engagement_score, engagement_updated_at, first_touch, last_touch
         from identity.profiles where org_id = ? and merged_into is null`,
      ),
    ),
    signals: labelled(await q('select profile_id, signal_type, signal_value, confidence, first_seen_at, last_seen_at, occurrence_count from identity.identity_signals where org_id = ?')),
    events: labelled(await q('select message_id, profile_id, event_name, event_timestamp, properties, context, traits, resolution_method from identity.events where org_id = ?')),
    clicks: labelled(await q('select click_type, click_id, profile_id, campaign_source, campaign_medium, first_seen_at, last_seen_at from identity.click_ids where org_id = ?')),
    sessions: labelled(await q('select profile_id, session_id from identity.profile_sessions where org_id = ?')),
    fingerprints: labelled(await q('select profile_id, fingerprint_hash, first_seen_at, last_seen_at, occurrence_count, stability_score from identity.fingerprints where org_id = ?')),
  };
}

/** Unmerge on real parts: the running resolver's events, the request as the Profiles API records it, the resolver's poller carrying it out. */
describeWithPostgres('unmerge', () => {
  const h = new Harness();
  let changes: Array<IncomingMessage<Record<string, unknown>>>;
  let poller: ReturnType<typeof startUnmerging>;
  let org: string;
  let reference: string;
  let phone: string;
  let ann: string;
  let mergeId: string;
  let unmergeId: string;

  beforeAll(async () => {
    await h.setUp();
    const resolver = await h.startResolver();
    poller = startUnmerging({ db: h.db, logger: h.logger, intervalMs: 50, onDone: () => resolver.relay.wake() });
    changes = await h.collect(h.topics.profilesChanges);
    [org, reference] = [await h.org('merged, then unmerged'), await h.org('never merged')];
    for (const o of [org, reference]) await setEngagementRules(h.db, o, { version: 1, rules: [{ event: 'purchase', points: 10 }, { event: '$pageview', points: 1 }] });

    // Each half a batch of its own: a profile made and merged away within one batch never existed, so there is no merge to undo.
    const merged = story(h, org);
    await h.ingest(merged.before);
    await h.ingest(merged.after);
    // The reference organisation: the same events, with the two profiles kept apart before the merge could happen.
    const apart = story(h, reference);
    await h.ingest(apart.before);
    // (The identifiers that made the two profiles, as the unmerge keeps them apart.)
    await keepApart(h.db, reference, { type: 'anonymous_id', value: 'phone' }, { type: 'user_id', value: 'ann' }, '00000000-0000-4000-8000-000000000000');
    await h.ingest(apart.after);

    phone = (await h.db('identity.profiles').where({ org_id: org }).whereNotNull('merged_into').first('id')).id as string;
    ann = (await h.profileBySignal(org, 'user_id', 'ann'))!.id;
    const entry = await h.db('identity.merges').where({ org_id: org }).first();
    expect(entry).toMatchObject({ source_profile_id: phone, target_profile_id: ann, reason: 'identify', message_id: 'c-signin' });
    mergeId = String(entry.id);
    expect((await h.liveProfiles(org)).map((p) => p.id)).toEqual([ann]);
    await h.waitFor('the events relayed', async () => (await h.count('select count(*) as n from identity.outbox', [])) === 0);
  }, 60_000);
  afterAll(async () => {
    await poller.stop();
    await h.tearDown();
  });

  it('records the request once, and the resolver carries it out', async () => {
    const recorded = await requestUnmerge(h.db, { orgId: org, profileRef: phone, mergeId, actor: 'admin-key:k1' });
    expect(recorded).toMatchObject({ outcome: 'recorded', unmerge: { merge_id: mergeId, status: 'pending', actor: 'admin-key:k1', profile_ids: null } });
    unmergeId = (recorded as { unmerge: { id: string } }).unmerge.id;
    await h.waitFor('the unmerge done', async () => (await findUnmerge(h.db, org, { id: unmergeId }))?.status !== 'pending');
    expect(await findUnmerge(h.db, org, { id: unmergeId })).toMatchObject({ status: 'done', failure_reason: null, profile_ids: [phone, ann] });
    expect(await requestUnmerge(h.db, { orgId: org, profileRef: ann, mergeId, actor: 'admin-key:k2' })).toMatchObject({ outcome: 'exists', unmerge: { id: unmergeId, status: 'done' } });
  });

  it('brings both profiles back as the same events make them where the merge never happened', async () => {
    expect((await h.liveProfiles(org)).map((p) => p.id).sort()).toEqual([ann, phone].sort());
    expect(await resolveProfileId(h.db, org, phone)).toBe(phone);
    const [mine, theirs] = [await snapshot(h.db, org), await snapshot(h.db, reference)];
    expect(mine).toEqual(theirs);
    // What that is: the phone keeps its browsing, its click, its touches, and the tablet that bought with its email.
    const phoneEvents = (await h.events(org)).filter((e) => e.profile_id === phone).map((e) => e.message_id);
    expect(phoneEvents).toEqual(['a-phone', 'd-browse', 'e-buy']);
    expect(await h.db('identity.profiles').where({ id: phone }).first()).toMatchObject({
      merged_into: null,
      user_id: null,
      event_count: 3,
      first_touch: expect.objectContaining({ source: 'phone-ad' }),
      last_touch: expect.objectContaining({ source: 'phone-later' }),
      engagement_score: expect.any(Number),
    });
    expect((await h.profileBySignal(org, 'anonymous_id', 'tablet'))?.id).toBe(phone);
    expect((await h.db('identity.click_ids').where({ org_id: org, click_id: 'G-p' }).first()).profile_id).toBe(phone);
  });

  it('marks the entry undone in the journal and tells profiles.changes', async () => {
    expect(await h.db('identity.merges').where({ org_id: org, id: mergeId }).first()).toMatchObject({ undone_by: unmergeId, undone_at: expect.any(Date) });
    await h.waitFor('unmerged and updated on profiles.changes', () =>
      changes.some((c) => c.value.change === 'unmerged' && c.value.profileId === phone && c.value.unmergedFrom === ann) &&
      changes.some((c) => c.value.change === 'updated' && c.value.profileId === ann),
    );
    // Conversions already sent stay sent: the unmerge put nothing on events.resolved or conversions.candidates.
    expect(await h.count(`select count(*) as n from identity.outbox where topic <> 'profilesChanges'`, [])).toBe(0);
  });

  it('keeps them apart: the same signals do not merge them again, and the refusal is a warning', async () => {
    const again = h.envelope(org, { type: 'identify', messageId: 'f-again', anonymousId: 'phone', userId: 'ann', timestamp: at(10) });
    await h.ingest([again]);
    expect((await h.event(org, 'f-again')).profile_id).toBe(ann);
    expect((await h.liveProfiles(org)).map((p) => p.id).sort()).toEqual([ann, phone].sort());
    const warnings = await readWarnings(h.db, org, { kind: 'merge_refused', limit: 10 });
    expect(warnings.warnings).toEqual([expect.objectContaining({ kind: 'merge_refused', messageId: 'f-again', detail: expect.stringContaining('an unmerge keeps them apart') })]);
  });

  it('holds in a replay of the raw log', async () => {
    // Left out: engagement (a replay carries engagement rules over after the log, replay.ts, so its events score
    // nothing) and which event made a profile (a replay reads the log partition by partition, in another order
    // than they arrived, and the profile's id is its first event's: ann's sign-in on the phone may make hers).
    const withoutEngagement = (s: Awaited<ReturnType<typeof snapshot>>) => ({
      ...s,
      profiles: s.profiles.map(({ engagement_score: _s, engagement_updated_at: _at, ...p }: Record<string, unknown>) => p),
      events: s.events.map(({ resolution_method: _m, ...e }: Record<string, unknown>) => e),
    });
    const before = withoutEngagement(await snapshot(h.db, org));
    await replayProjections({
      db: h.db,
      logger: h.logger,
      label: 'unmerge',
      keys: h.keyReader(),
      batch: { hashes: h.hashes },
      source: (consume) => readToEnd<RawLogMessage>(h.bus, h.topics.eventsRaw, (ms) => consume(ms.map((m) => m.value)), { maxBatchSize: 50 }),
    });
    expect(withoutEngagement(await snapshot(h.db, org))).toEqual(before);
    expect(await h.liveProfiles(org)).toHaveLength(2);
  }, 60_000);

  it('is undone by an admin merge of the two, which lifts the rule', async () => {
    const [source, target] = [(await h.profileBySignal(org, 'anonymous_id', 'phone'))!.id, (await h.profileBySignal(org, 'user_id', 'ann'))!.id];
    await adminMergeProfiles(h.db, { orgId: org, source, target, actor: 'admin-key:k1', note: 'same person after all' });
    expect(await h.count('select count(*) as n from identity.kept_apart where org_id = ?', [org])).toBe(0);
    expect((await h.liveProfiles(org)).map((p) => p.id)).toEqual([target]);
  });

  it('undoes an alias, and keeps an admin merge made after it, with no entry twice in the journal', async () => {
    const o = await h.org('alias');
    const e = (event: Parameters<typeof h.envelope>[1]) => h.envelope(o, event);
    await h.ingest([e({ type: 'page', messageId: 's-page', anonymousId: 's1', timestamp: at(50) }), e({ type: 'identify', messageId: 't-in', anonymousId: 't1', userId: 'tom', timestamp: at(49) })]);
    await h.ingest([e({ type: 'page', messageId: 'x-page', anonymousId: 'x1', timestamp: at(48) })]);
    await h.ingest([e({ type: 'alias', messageId: 'alias', anonymousId: 't1', userId: 'tom', previousId: 's1', timestamp: at(40) })]);
    const [s, t, x] = [await h.profileBySignal(o, 'anonymous_id', 's1'), await h.profileBySignal(o, 'user_id', 'tom'), await h.profileBySignal(o, 'anonymous_id', 'x1')];
    expect(s!.id).toBe(t!.id);
    const sId = (await h.db('identity.merges').where({ org_id: o, reason: 'alias' }).first()).source_profile_id as string;
    await adminMergeProfiles(h.db, { orgId: o, source: x!.id, target: t!.id, actor: 'admin-key:k1' });
    const alias = String((await h.db('identity.merges').where({ org_id: o, reason: 'alias' }).first()).id);

    const recorded = await requestUnmerge(h.db, { orgId: o, profileRef: t!.id, mergeId: alias, actor: 'admin-key:k1' });
    expect(recorded.outcome).toBe('recorded');
    const id = (recorded as { unmerge: { id: string } }).unmerge.id;
    await h.waitFor('the unmerge done', async () => (await findUnmerge(h.db, o, { id }))?.status === 'done');

    expect((await h.liveProfiles(o)).map((p) => p.id).sort()).toEqual([sId, t!.id].sort());
    expect(await resolveProfileId(h.db, o, x!.id)).toBe(t!.id);
    expect((await h.event(o, 's-page')).profile_id).toBe(sId);
    expect((await h.event(o, 'alias')).profile_id).toBe(t!.id);
    const journal = await h.db('identity.merges').where({ org_id: o }).orderBy('id');
    expect(journal.map((m: { reason: string; undone_by: string | null }) => [m.reason, m.undone_by])).toEqual([
      ['alias', id],
      ['admin', null],
    ]);
    // Undoing it again is the same request.
    expect(await requestUnmerge(h.db, { orgId: o, profileRef: sId, mergeId: alias, actor: 'admin-key:k2' })).toMatchObject({ outcome: 'exists', unmerge: { id } });

    // Erasing the person of the profile that came back takes the rule naming their identifier, and the
    // journal entry with its unmerge.
    expect(await h.count('select count(*) as n from identity.kept_apart where org_id = ?', [o])).toBe(1);
    const erasure = await requestErasure(h.db, { orgId: o, target: { kind: 'profile', id: sId }, actor: 'test', hashes: h.hashes });
    expect(erasure.outcome).toBe('recorded');
    const erasureId = (erasure as { erasure: { id: string } }).erasure.id;
    expect(await inTransactionWithRetry(h.db, (trx) => eraseProfile(trx, { orgId: o, erasureId, profileId: sId, hashes: h.hashes }))).toMatchObject({ status: 'done', counts: { kept_apart: 1 } });
    expect(await h.count('select count(*) as n from identity.kept_apart where org_id = ?', [o])).toBe(0);
    expect(await h.count('select count(*) as n from identity.unmerges where org_id = ?', [o])).toBe(0);
    expect(await findUnmerge(h.db, o, { id })).toBeUndefined();
  });
});

describe('envelopeOf', () => {
  const row = { message_id: 'm', event_timestamp: '2026-01-01T00:00:00.000Z', received_at: '2026-01-01T00:00:01.000Z', properties: {}, context: { ip_address: '10.0.0.1' }, traits: null, anonymous_id: 'a', user_id: null, previous_id: null };
  it.each([
    ['$pageview', { type: 'page' }],
    ['$screen', { type: 'screen' }],
    ['$identify', { type: 'identify' }],
    ['$group', { type: 'group' }],
    ['purchase', { type: 'track', event: 'purchase' }],
  ])('reads a stored %s back as its type', (name, expected) => {
    expect(envelopeOf('o', { ...row, event_name: name }).event).toMatchObject(expected);
  });
  it('gives an alias its previousId back, and the client IP from the stored context', () => {
    const e = envelopeOf('o', { ...row, event_name: '$alias', user_id: 'u', previous_id: 'old' });
    expect(e).toMatchObject({ clientIp: '10.0.0.1', event: { type: 'alias', userId: 'u', previousId: 'old' } });
    expect(envelopeOf('o', { ...row, event_name: '$alias', user_id: 'u', previous_id: '' }).event).not.toHaveProperty('previousId');
  });
});
