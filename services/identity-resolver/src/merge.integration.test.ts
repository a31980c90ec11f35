import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { IncomingMessage } from '@svc/bus';
import { NotFoundError, ValidationError } from '@svc/runtime';
import { describeWithPostgres } from '@svc/testkit';
import { adminMergeProfiles, profileStats, resolveProfileId } from '@svc/identity';
import { Harness, minutesAgo, type ProfileRow } from './test-support/harness';

/** The one merge routine as the Profiles API's admin merge uses it, and the read helpers it exports. */
describeWithPostgres('admin merge and profile look-ups', () => {
  const h = new Harness();
  let changes: Array<IncomingMessage<Record<string, unknown>>>;
  beforeAll(async () => {
    await h.setUp();
    await h.startResolver();
    changes = await h.collect(h.topics.profilesChanges);
  });
  afterAll(() => h.tearDown());

  const need = async (org: string, type: string, value: string): Promise<ProfileRow> => {
    const p = await h.profileBySignal(org, type, value);
    if (!p) throw new Error(`no profile has ${type} ${value}`);
    return p;
  };
  const granted = (hash: string) => ({ consent: true, fingerprint: { hash } });

  it('moves identities, events, click IDs, fingerprints and sessions, keeps the earlier first and later last touch', async () => {
    const org = await h.org();
    await h.ingest([
      h.envelope(org, { type: 'identify', anonymousId: 'd1', userId: 'ada', traits: { email: 'ada@example.com', plan: 'pro' }, timestamp: minutesAgo(50), context: { campaign: { source: 'early' }, session: { id: 's-a' }, ...granted('fp-1') } }),
      h.envelope(org, { type: 'page', anonymousId: 'd1', timestamp: minutesAgo(10), context: { campaign: { source: 'late', gclid: 'G-a' }, session: { id: 's-a' } } }),
      h.envelope(org, { type: 'identify', anonymousId: 'd2', userId: 'bea', traits: { plan: 'free', city: 'Pune' }, timestamp: minutesAgo(60), context: { campaign: { source: 'earliest', fbclid: 'F-b' }, session: { id: 's-b' }, ...granted('fp-1') } }),
      h.envelope(org, { type: 'page', anonymousId: 'd2', timestamp: minutesAgo(5), context: { campaign: { source: 'latest' }, session: { id: 's-b' }, ...granted('fp-2') } }),
    ]);
    const ada = await need(org, 'user_id', 'ada');
    const bea = await need(org, 'user_id', 'bea');

    const result = await adminMergeProfiles(h.db, { orgId: org, source: bea.canonical_id, target: ada.id, actor: 'admin:key-1', note: 'same person' });
    expect(result).toEqual({ sourceId: bea.id, targetId: ada.id });

    const survivor = await need(org, 'user_id', 'bea');
    expect(survivor).toMatchObject({
      id: ada.id,
      user_id: 'ada',
      event_count: 4,
      session_count: 2,
      first_touch: { source: 'earliest' },
      last_touch: { source: 'latest' },
      traits: { email: 'ada@example.com', plan: 'pro', city: 'Pune' },
    });
    expect(survivor.first_seen_at).toEqual(bea.first_seen_at);
    expect(survivor.last_seen_at).toEqual(bea.last_seen_at);
    expect(await h.db('identity.profiles').where({ id: bea.id }).first()).toMatchObject({ merged_into: ada.id, canonical_id: bea.canonical_id });
    expect(await h.db('identity.identity_signals').where({ org_id: org }).whereNot({ profile_id: ada.id })).toEqual([]);
    expect((await h.events(org)).map((e) => e.profile_id)).toEqual([ada.id, ada.id, ada.id, ada.id]);
    expect((await h.db('identity.click_ids').where({ org_id: org }).orderBy('click_type')).map((c: { click_type: string; profile_id: string }) => [c.click_type, c.profile_id])).toEqual([
      ['fbclid', ada.id],
      ['gclid', ada.id],
    ]);
    const fps = await h.db('identity.fingerprints').where({ org_id: org }).orderBy('fingerprint_hash');
    expect(fps.map((f: { profile_id: string; fingerprint_hash: string; occurrence_count: number; stability_score: number }) => [f.profile_id, f.fingerprint_hash, f.occurrence_count, Number(f.stability_score.toFixed(3))])).toEqual([
      [ada.id, 'fp-1', 2, 0.667],
      [ada.id, 'fp-2', 1, 0.333],
    ]);
    expect(await h.db('identity.profile_sessions').where({ org_id: org, profile_id: bea.id })).toEqual([]);
    expect(await h.db('identity.merges').where({ org_id: org })).toEqual([
      expect.objectContaining({ source_profile_id: bea.id, target_profile_id: ada.id, reason: 'admin', actor: 'admin:key-1', note: 'same person', message_id: null }),
    ]);
    await h.waitFor('merged and updated on profiles.changes', () =>
      changes.some((c) => c.value.change === 'merged' && c.value.profileId === bea.id && c.value.mergedInto === ada.id) &&
      changes.some((c) => c.value.change === 'updated' && c.value.profileId === ada.id),
    );

    // Both of the source's ids keep resolving; later events of its user land on the survivor.
    expect(await resolveProfileId(h.db, org, bea.id)).toBe(ada.id);
    expect(await resolveProfileId(h.db, org, bea.canonical_id)).toBe(ada.id);
    const later = h.envelope(org, { type: 'track', event: 'x', anonymousId: 'd3', userId: 'bea', timestamp: minutesAgo(1) });
    await h.ingest([later]);
    expect(await h.event(org, later.event.messageId)).toMatchObject({ profile_id: ada.id, resolution_method: 'user_id' });

    // Merging the survivor away re-points what had been merged into it: one hop to the live profile.
    await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'd4', userId: 'cal', timestamp: minutesAgo(1) })]);
    const cal = await need(org, 'user_id', 'cal');
    await adminMergeProfiles(h.db, { orgId: org, source: ada.id, target: cal.canonical_id, actor: 'admin:key-1' });
    expect(await h.db('identity.profiles').where({ id: bea.id }).first()).toMatchObject({ merged_into: cal.id });
    expect(await resolveProfileId(h.db, org, bea.canonical_id)).toBe(cal.id);
    expect(await need(org, 'user_id', 'bea')).toMatchObject({ id: cal.id, event_count: 6 });
  });

  it('refuses a profile into itself, and unknown or other-organisation profiles', async () => {
    const org = await h.org();
    const other = await h.org();
    await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'd1', userId: 'u1', timestamp: minutesAgo(2) })]);
    await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'd2', userId: 'u2', timestamp: minutesAgo(2) })]);
    await h.ingest([h.envelope(other, { type: 'identify', anonymousId: 'd1', userId: 'u1', timestamp: minutesAgo(2) })]);
    const u1 = await need(org, 'user_id', 'u1');
    const u2 = await need(org, 'user_id', 'u2');
    const foreign = await need(other, 'user_id', 'u1');
    const merge = (source: string, target: string, orgId = org) => adminMergeProfiles(h.db, { orgId, source, target, actor: 'admin' });

    await expect(merge(u1.id, u1.id)).rejects.toThrow(ValidationError);
    await expect(merge(u1.id, u1.canonical_id)).rejects.toThrow(ValidationError);
    await expect(merge(u1.id, foreign.id)).rejects.toThrow(new NotFoundError('One or both profiles not found'));
    await expect(merge(u1.id, '00000000-0000-4000-8000-000000000000')).rejects.toThrow(NotFoundError);
    await expect(merge('prf_nope', u2.id)).rejects.toThrow(NotFoundError);
    await expect(merge(u1.id, u2.id, 'not-a-uuid')).rejects.toThrow(NotFoundError);
    expect(await resolveProfileId(h.db, other, u1.id)).toBeUndefined();
    expect(await resolveProfileId(h.db, org, 'prf_nope')).toBeUndefined();

    await merge(u1.id, u2.id);
    await expect(merge(u1.id, u2.id)).rejects.toThrow(ValidationError);
    expect(await h.liveProfiles(org)).toHaveLength(1);
  });

  it('merges while the resolver stores events of both profiles: every event ends on the survivor', async () => {
    const org = await h.org();
    await h.ingest([
      h.envelope(org, { type: 'identify', anonymousId: 'm1', userId: 'mia', timestamp: minutesAgo(30) }),
      h.envelope(org, { type: 'identify', anonymousId: 'm2', userId: 'max', timestamp: minutesAgo(30) }),
    ]);
    const mia = await need(org, 'user_id', 'mia');
    const max = await need(org, 'user_id', 'max');
    const burst = Array.from({ length: 60 }, (_, i) =>
      h.envelope(org, { type: 'track', event: 'tick', anonymousId: i % 2 ? 'm1' : 'm2', timestamp: minutesAgo(20 - i / 10) }),
    );
    const produced = h.produce(burst);
    await adminMergeProfiles(h.db, { orgId: org, source: max.id, target: mia.id, actor: 'admin' });
    await produced;
    await h.waitForStored(org, burst.map((e) => e.event.messageId));
    expect(await h.liveProfiles(org)).toEqual([expect.objectContaining({ id: mia.id, event_count: 62 })]);
    expect(await h.count('select count(*) as n from identity.events where org_id = ? and profile_id <> ?', [org, mia.id])).toBe(0);
  });

  it('profile stats: sessions, and events of the last 30 days by event time', async () => {
    const org = await h.org();
    const day = 24 * 60;
    await h.ingest([
      h.envelope(org, { type: 'page', anonymousId: 's1', timestamp: minutesAgo(40 * day), context: { session: { id: 'old' } } }),
      h.envelope(org, { type: 'page', anonymousId: 's1', timestamp: minutesAgo(29 * day), context: { session: { id: 'mid' } } }),
      h.envelope(org, { type: 'page', anonymousId: 's1', timestamp: minutesAgo(1), context: { session: { id: 'mid' } } }),
    ]);
    const p = await need(org, 'anonymous_id', 's1');
    expect(await profileStats(h.db, org, p.id)).toEqual({ total_sessions: 2, events_last_30_days: 2 });
    expect(await profileStats(h.db, org, '00000000-0000-4000-8000-000000000000')).toBeUndefined();
  });
});
