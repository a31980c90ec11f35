import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Messages } from '@svc/contracts';
import { describeWithPostgres } from '@svc/testkit';
import { PROFILE_SORT_FIELDS } from '@svc/contracts';
import { ProfileMessages } from './messages';
import { ProfileApiHarness, minutesAgo, type OrgKeys } from './test-support/harness';

type Item = Record<string, unknown> & { id: string };
type StoredEvent = { id: string; event_name: string; event_timestamp: string };

/**
 * The read routes over real PostgreSQL, on profiles the resolver built from
 * raw envelopes. Organisation A holds the fixtures, B the same identifiers
 * in another organisation, L the list fixtures.
 */
describeWithPostgres('Profiles API read routes on PostgreSQL', () => {
  const h = new ProfileApiHarness();
  let A: OrgKeys;
  let B: OrgKeys;
  let L: OrgKeys;
  const ids: Record<string, { id: string; canonical_id: string }> = {};

  beforeAll(async () => {
    await h.setUp();
    [A, B, L] = [await h.org('A'), await h.org('B'), await h.org('L')];

    // alice: an old campaign visit 40 days ago (with a Google click), then identified with email and phone,
    // a fingerprint under consent, a purchase from a newsletter; two sessions.
    await h.ingest([
      h.envelope(A.orgId, {
        type: 'page',
        anonymousId: 'a-dev1',
        timestamp: minutesAgo(40 * 24 * 60),
        context: { session: { id: 's0' }, campaign: { source: 'google', medium: 'cpc', name: 'spring', gclid: 'gclid-alice-1' } },
      }),
      h.envelope(A.orgId, {
        type: 'identify',
        anonymousId: 'a-dev1',
        userId: 'alice',
        traits: { email: ' Alice@Example.com ', phone: '98765 43210' },
        timestamp: minutesAgo(60),
        context: { session: { id: 's1' }, consent: true, fingerprint: { hash: 'fp-alice', components: { screen: '1920x1080' } } },
      }),
      h.envelope(A.orgId, {
        type: 'track',
        event: 'purchase',
        anonymousId: 'a-dev1',
        userId: 'alice',
        properties: { value: 10, currency: 'EUR' },
        timestamp: minutesAgo(30),
        context: { session: { id: 's1' }, campaign: { source: 'newsletter', medium: 'email', name: 'autumn' } },
      }),
    ]);
    // bob: anonymous. carol: identified on a laptop; her phone browsed anonymously and is then identified
    // as carol, so the resolver merges the phone's profile into hers.
    await h.ingest([
      h.envelope(A.orgId, { type: 'page', anonymousId: 'b-dev', timestamp: minutesAgo(50) }),
      h.envelope(A.orgId, { type: 'identify', anonymousId: 'c-laptop', userId: 'carol', traits: { email: 'carol@shop.test' }, timestamp: minutesAgo(45) }),
    ]);
    await h.ingest([h.envelope(A.orgId, { type: 'page', anonymousId: 'c-phone', timestamp: minutesAgo(44) })]);
    ids.cphone = await h.profileOf(A.orgId, 'anonymous_id', 'c-phone');
    await h.ingest([h.envelope(A.orgId, { type: 'identify', anonymousId: 'c-phone', userId: 'carol', timestamp: minutesAgo(43) })]);
    for (const [name, type, value] of [
      ['alice', 'user_id', 'alice'],
      ['bob', 'anonymous_id', 'b-dev'],
      ['carol', 'user_id', 'carol'],
    ] as const) {
      ids[name] = await h.profileOf(A.orgId, type, value);
    }
    // The same identifiers in organisation B.
    await h.ingest([h.envelope(B.orgId, { type: 'identify', anonymousId: 'a-dev1', userId: 'alice', traits: { email: 'alice@example.com' }, timestamp: minutesAgo(20) })]);
    ids.bAlice = await h.profileOf(B.orgId, 'user_id', 'alice');

    // L: twelve profiles with ties on every sort field (same timestamps, same counts), some identified.
    const at = minutesAgo(100);
    const envelopes = [];
    for (let i = 0; i < 12; i++) {
      const anonymousId = `l-${i}`;
      const timestamp = i < 4 ? at : minutesAgo(100 - i);
      envelopes.push(
        i % 3 === 0
          ? h.envelope(L.orgId, { type: 'identify', anonymousId, userId: `l-user-${i}`, timestamp, context: { session: { id: `ls-${i}` } } })
          : h.envelope(L.orgId, { type: 'page', anonymousId, timestamp }),
      );
      if (i % 4 === 1) envelopes.push(h.envelope(L.orgId, { type: 'page', anonymousId, timestamp: minutesAgo(10), context: { session: { id: `ls2-${i}` } } }));
    }
    await h.ingest(envelopes);
    // Engagement rules live outside this interface; give some profiles a score (ties included).
    await h.db.raw(
      `update identity.profiles set engagement_score = case when (select count(*) from identity.profiles q where q.org_id = profiles.org_id and q.id < profiles.id) % 3 = 0 then 2.5 else 0 end
       where org_id = ?`,
      [L.orgId],
    );
    // One of L's profiles merged away (by the resolver): never listed.
    await h.ingest([h.envelope(L.orgId, { type: 'identify', anonymousId: 'l-1', userId: 'l-user-0', timestamp: minutesAgo(5) })]);
  });
  afterAll(() => h.tearDown());

  describe('list', () => {
    const liveOfL = async (): Promise<Item[]> => {
      const rows = (await h.db('identity.profiles').where({ org_id: L.orgId }).whereNull('merged_into')) as Array<Record<string, unknown> & { id: string }>;
      return rows.map((r) => ({ ...r, id: r.id }));
    };
    const value = (row: Record<string, unknown>, field: string): number | string => {
      const v = row[field];
      return v instanceof Date ? v.toISOString() : typeof v === 'string' && !Number.isNaN(Number(v)) ? Number(v) : (v as number | string);
    };

    it('lists live profiles with the item fields, newest activity first, and the total', async () => {
      const res = await h.get('', L.read);
      expect(res.status).toBe(200);
      const live = await liveOfL();
      expect(res.body).toMatchObject({ success: true, total: live.length, limit: 50, offset: 0 });
      const profiles = res.body.profiles as Item[];
      expect(profiles).toHaveLength(live.length);
      expect(Object.keys(profiles[0]!).sort()).toEqual(
        ['id', 'canonical_id', 'last_seen_at', 'first_seen_at', 'event_count', 'session_count', 'engagement_score', 'created_at', 'identified', 'first_touch', 'last_touch'].sort(),
      );
      const merged = await h.db('identity.profiles').where({ org_id: L.orgId }).whereNotNull('merged_into').first('id');
      expect(merged).toBeDefined();
      expect(profiles.map((p) => p.id)).not.toContain((merged as { id: string }).id);
    });

    const cases = PROFILE_SORT_FIELDS.flatMap((field) => (['asc', 'desc'] as const).map((order) => [field, order] as const));
    it.each(cases)('sort_by=%s sort_order=%s pages in a stable order, ties broken by id', async (field, order) => {
      const live = await liveOfL();
      const sign = order === 'asc' ? 1 : -1;
      const expected = [...live]
        .sort((a, b) => {
          const [x, y] = [value(a, field), value(b, field)];
          if (x !== y) return (x < y ? -1 : 1) * sign;
          return (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) * sign;
        })
        .map((p) => p.id);
      const seen: string[] = [];
      for (let offset = 0; offset < live.length; offset += 5) {
        const res = await h.get(`?sort_by=${field}&sort_order=${order}&limit=5&offset=${offset}`, L.read);
        expect(res.body).toMatchObject({ success: true, total: live.length, limit: 5, offset });
        seen.push(...(res.body.profiles as Item[]).map((p) => p.id));
      }
      expect(seen).toEqual(expected);
    });

    it.each([
      ['identified=true', 'true', true],
      ['identified=false', 'false', false],
    ])('%s filters and counts', async (_name, param, identified) => {
      const live = (await liveOfL()).filter((p) => p.identified === identified);
      const res = await h.get(`?identified=${param}`, L.read);
      expect(res.body.total).toBe(live.length);
      expect((res.body.profiles as Item[]).map((p) => p.identified)).toEqual(live.map(() => identified));
    });

    it('clamps limit to 100 and pages past the end with an empty page', async () => {
      expect((await h.get('?limit=1000', L.read)).body).toMatchObject({ limit: 100 });
      expect((await h.get('?offset=500', L.read)).body).toMatchObject({ success: true, profiles: [], offset: 500 });
    });

    const invalid: Array<[string, string]> = [
      ['?limit=-1', ProfileMessages.invalidLimit],
      ['?limit=abc', ProfileMessages.invalidLimit],
      ['?limit=2.5', ProfileMessages.invalidLimit],
      ['?limit=0', ProfileMessages.invalidLimit],
      ['?offset=-1', ProfileMessages.invalidOffset],
      ['?offset=1.5', ProfileMessages.invalidOffset],
      ['?offset=x', ProfileMessages.invalidOffset],
      ['?identified=maybe', ProfileMessages.invalidIdentified],
      ['?sort_by=name', ProfileMessages.invalidSortBy],
      ['?sort_order=sideways', ProfileMessages.invalidSortOrder],
      ['?limit=1&limit=2', ProfileMessages.repeatedParameter('limit')],
    ];
    it.each(invalid)('GET /v1-profiles%s → 400 %s', async (query, error) => {
      expect(await h.get(query, L.read)).toMatchObject({ status: 400, body: { success: false, error } });
    });
  });

  describe('detail', () => {
    it('shows the profile with its active identities and stats', async () => {
      const res = await h.get(`/${ids.alice!.id}`, A.read);
      expect(res.status).toBe(200);
      const profile = res.body.profile as Record<string, unknown>;
      expect(profile).toEqual({
        id: ids.alice!.id,
        canonical_id: ids.alice!.canonical_id,
        identities: [
          expect.objectContaining({ signal_type: 'user_id', signal_value: 'alice', confidence: 1, occurrence_count: 2 }),
          expect.objectContaining({ signal_type: 'email', signal_value: 'alice@example.com', confidence: 0.9, occurrence_count: 1 }),
          expect.objectContaining({ signal_type: 'phone', signal_value: '+919876543210', confidence: 0.8, occurrence_count: 1 }),
          expect.objectContaining({ signal_type: 'anonymous_id', signal_value: 'a-dev1', confidence: 0.6, occurrence_count: 3 }),
        ],
        stats: { total_sessions: 2, events_last_30_days: 2 },
        identified: true,
        user_id: 'alice',
        first_touch: { source: 'google', medium: 'cpc', campaign: 'spring', at: expect.any(String) },
        last_touch: { source: 'newsletter', medium: 'email', campaign: 'autumn', at: expect.any(String) },
        first_seen_at: expect.any(String),
        last_seen_at: expect.any(String),
        event_count: 3,
        engagement_score: 0,
        created_at: expect.any(String),
      });
      expect(Object.keys((profile.identities as object[])[0]!).sort()).toEqual(
        ['signal_type', 'signal_value', 'confidence', 'first_seen_at', 'last_seen_at', 'occurrence_count'].sort(),
      );
    });

    it('answers the same for the canonical_id', async () => {
      const byId = await h.get(`/${ids.alice!.id}`, A.read);
      const byCanonical = await h.get(`/${ids.alice!.canonical_id}`, A.admin);
      expect(byCanonical).toMatchObject({ status: 200, body: byId.body });
    });

    it('answers for a merged-away id, or its canonical_id, with the survivor', async () => {
      for (const id of [ids.cphone!.id, ids.cphone!.canonical_id]) {
        const res = await h.get(`/${id}`, A.read);
        expect(res.status).toBe(200);
        expect(res.body.profile).toMatchObject({ id: ids.carol!.id, canonical_id: ids.carol!.canonical_id, user_id: 'carol', event_count: 3 });
        expect((res.body.profile as { identities: Array<{ signal_value: string }> }).identities.map((s) => s.signal_value)).toEqual(
          expect.arrayContaining(['carol', 'carol@shop.test', 'c-laptop', 'c-phone']),
        );
      }
    });

    it('follows a longer merged_into chain (merges never leave one) through the resolver’s resolveProfileId', async () => {
      const org = await h.org('chain');
      await h.ingest(['x', 'y', 'z'].map((d, i) => h.envelope(org.orgId, { type: 'page', anonymousId: `chain-${d}`, timestamp: minutesAgo(10 - i) })));
      const [x, y, z] = [await h.profileOf(org.orgId, 'anonymous_id', 'chain-x'), await h.profileOf(org.orgId, 'anonymous_id', 'chain-y'), await h.profileOf(org.orgId, 'anonymous_id', 'chain-z')];
      // Hand-made: x → y → z (the merge routine would have pointed x at z directly).
      await h.db('identity.profiles').where({ id: y.id }).update({ merged_into: z.id });
      await h.db('identity.profiles').where({ id: x.id }).update({ merged_into: y.id });
      for (const suffix of ['', '/identities', '/events']) {
        const res = await h.get(`/${x.canonical_id}${suffix}`, org.read);
        expect(res.status).toBe(200);
      }
      expect((await h.get(`/${x.id}`, org.read)).body.profile).toMatchObject({ id: z.id });
    });

    it.each([
      ['an unknown UUID', '00000000-0000-4000-8000-000000000000'],
      ['an unknown canonical_id', 'prf_00000000000000000000000000'],
      ['free text', 'nobody'],
      ['an over-long id', 'x'.repeat(500)],
      ['a percent-encoded id', '%E2%9C%93'],
    ])('404 Profile not found for %s', async (_name, id) => {
      expect(await h.get(`/${id}`, A.read)).toMatchObject({ status: 404, body: { success: false, error: Messages.profileNotFound } });
    });
  });

  describe('identities', () => {
    it('lists signals, fingerprints and click IDs with the spec fields', async () => {
      const res = await h.get(`/${ids.alice!.canonical_id}/identities`, A.read);
      expect(res.status).toBe(200);
      const identities = res.body.identities as { signals: object[]; fingerprints: object[]; click_ids: object[] };
      expect(identities.signals).toHaveLength(4);
      expect(identities.fingerprints).toEqual([
        { fingerprint_hash: 'fp-alice', stability_score: 1, first_seen_at: expect.any(String), last_seen_at: expect.any(String), occurrence_count: 1 },
      ]);
      expect(identities.click_ids).toEqual([
        { click_type: 'gclid', click_id: 'gclid-alice-1', campaign_source: 'google', campaign_medium: 'cpc', first_seen_at: expect.any(String), is_exhausted: false },
      ]);
    });

    it('shows the survivor for a merged-away id', async () => {
      const res = await h.get(`/${ids.cphone!.id}/identities`, A.read);
      expect((res.body.identities as { signals: Array<{ signal_value: string }> }).signals.map((s) => s.signal_value)).toContain('c-phone');
    });
  });

  describe('events', () => {
    let pager: { id: string; canonical_id: string };
    const base = Date.now() - 2 * 24 * 3_600_000;
    const tAt = (i: number) => new Date(base - i * 60_000).toISOString();

    beforeAll(async () => {
      // 25 events, newest first by index; events 9, 10, 11 share one timestamp (a tie across a page boundary).
      await h.ingest(
        Array.from({ length: 25 }, (_, i) =>
          h.envelope(A.orgId, {
            type: 'track',
            event: i % 5 === 0 ? 'purchase' : 'viewed',
            anonymousId: 'pager',
            timestamp: tAt(i >= 9 && i <= 11 ? 9 : i),
            properties: { i },
          }),
        ),
      );
      pager = await h.profileOf(A.orgId, 'anonymous_id', 'pager');
    });

    const page = (id: string, query: string, key = A.read) => h.get(`/${id}/events${query}`, key);
    const eventsOf = (r: { body: Record<string, unknown> }) => r.body.events as StoredEvent[];

    it('offset path: newest first, the stored fields, an exact total, and a cursor to go on with', async () => {
      const res = await page(pager.id, '?limit=10');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ success: true, total: 25, limit: 10, offset: 0, total_is_estimate: false, has_more: true, next_cursor: expect.any(String) });
      const events = eventsOf(res);
      expect(events).toHaveLength(10);
      expect(Object.keys(events[0]!).sort()).toEqual(['context', 'event_name', 'event_timestamp', 'id', 'properties', 'resolution_method'].sort());
      expect(events[0]).toMatchObject({ event_name: 'purchase', properties: { i: 0 }, resolution_method: 'new_profile', context: { ip_address: '203.0.113.7' } });
      expect((await page(pager.id, '?limit=10&offset=20')).body).toMatchObject({ total: 25, has_more: false, next_cursor: null });
    });

    it('cursor paging visits every event exactly once, newest first, while new events arrive', async () => {
      const org = await h.org('cursor');
      const at = (i: number) => new Date(base - i * 60_000).toISOString();
      await h.ingest(Array.from({ length: 23 }, (_, i) => h.envelope(org.orgId, { type: 'track', event: 'e', anonymousId: 'walker', timestamp: at(i < 6 ? 3 : i), properties: { i } })));
      const walker = await h.profileOf(org.orgId, 'anonymous_id', 'walker');
      const before = (await h.db('identity.events').where({ org_id: org.orgId }).select('id')).map((r: { id: string }) => r.id);

      const seen: StoredEvent[] = [];
      let res = await page(walker.id, '?limit=5', org.read);
      let pages = 0;
      for (;;) {
        seen.push(...eventsOf(res));
        pages++;
        if (pages === 1) {
          // Newer events land above the position, a late one below it: the late one is visited, the newer ones are not.
          await h.ingest([
            ...Array.from({ length: 4 }, () => h.envelope(org.orgId, { type: 'track', event: 'e', anonymousId: 'walker', timestamp: new Date().toISOString() })),
            h.envelope(org.orgId, { type: 'track', event: 'late', anonymousId: 'walker', timestamp: at(500) }),
          ]);
        }
        if (pages === 3) {
          await h.ingest([h.envelope(org.orgId, { type: 'track', event: 'e', anonymousId: 'walker', timestamp: new Date().toISOString() })]);
        }
        if (!res.body.has_more) break;
        expect(res.body.next_cursor).toEqual(expect.any(String));
        res = await page(walker.id, `?limit=5&cursor=${res.body.next_cursor as string}`, org.read);
        expect(res.body).toMatchObject({ success: true, limit: 5, total_is_estimate: true });
        expect(res.body).not.toHaveProperty('offset');
      }
      expect(res.body.next_cursor).toBeNull();
      const late = (await h.db('identity.events').where({ org_id: org.orgId, event_name: 'late' }).first('id')) as { id: string };
      const seenIds = seen.map((e) => e.id);
      expect(new Set(seenIds).size).toBe(seenIds.length);
      expect([...seenIds].sort()).toEqual([...before, late.id].sort());
      const keys = seen.map((e) => [e.event_timestamp, e.id] as const);
      for (let i = 1; i < keys.length; i++) {
        const [[t0, id0], [t1, id1]] = [keys[i - 1]!, keys[i]!];
        expect(t0 > t1 || (t0 === t1 && id0 > id1)).toBe(true);
      }
    });

    it('estimates the total on the cursor path, counts it exactly with precise_total=1', async () => {
      const first = await page(pager.id, '?limit=3');
      const cursor = first.body.next_cursor as string;
      expect((await page(pager.id, `?limit=3&cursor=${cursor}`)).body).toMatchObject({ total: 25, total_is_estimate: true });
      // The counter is the estimate: make it disagree with the rows to see which one is reported.
      await h.db('identity.profiles').where({ id: pager.id }).increment('event_count', 1000);
      try {
        expect((await page(pager.id, `?limit=3&cursor=${cursor}`)).body).toMatchObject({ total: 1025, total_is_estimate: true });
        expect((await page(pager.id, `?limit=3&cursor=${cursor}&precise_total=1`)).body).toMatchObject({ total: 25, total_is_estimate: false });
        expect((await page(pager.id, `?limit=3&offset=3`)).body).toMatchObject({ total: 25, total_is_estimate: false });
      } finally {
        await h.db('identity.profiles').where({ id: pager.id }).decrement('event_count', 1000);
      }
    });

    it('filters by event_name on both paths; the cursor keeps the filter', async () => {
      const res = await page(pager.id, '?event_name=purchase&limit=2');
      expect(res.body).toMatchObject({ total: 5, has_more: true });
      expect(eventsOf(res).map((e) => e.event_name)).toEqual(['purchase', 'purchase']);
      const next = await page(pager.id, `?event_name=purchase&limit=10&cursor=${res.body.next_cursor as string}`);
      expect(next.body).toMatchObject({ has_more: false, total: 5, total_is_estimate: true });
      expect(eventsOf(next)).toHaveLength(3);
      expect((await page(pager.id, '?event_name=nothing-like-this')).body).toMatchObject({ events: [], total: 0, has_more: false });
    });

    it('clamps limit to 200', async () => {
      expect((await page(pager.id, '?limit=5000')).body).toMatchObject({ limit: 200, has_more: false });
    });

    it('refuses a tampered, foreign or mismatched cursor with 400 Invalid cursor', async () => {
      const good = (await page(pager.id, '?limit=2')).body.next_cursor as string;
      const flipped = `${good.slice(0, 5)}${good[5] === 'A' ? 'B' : 'A'}${good.slice(6)}`;
      const foreignRes = await page(ids.alice!.id, '?limit=1');
      const filtered = (await page(pager.id, '?limit=1&event_name=viewed')).body.next_cursor as string;
      const invalid: Array<[string, string, string, string]> = [
        ['flipped character', pager.id, flipped, ''],
        ['garbage', pager.id, 'not-a-cursor', ''],
        ['an offset as cursor', pager.id, '10', ''],
        ['another profile’s cursor', pager.id, foreignRes.body.next_cursor as string, ''],
        ['cursor of another filter', pager.id, filtered, '&event_name=purchase'],
        ['filtered cursor without the filter', pager.id, filtered, ''],
      ];
      for (const [name, id, cursor, extra] of invalid) {
        const res = await page(id, `?cursor=${encodeURIComponent(cursor)}${extra}`);
        expect({ name, status: res.status, body: res.body }).toEqual({ name, status: 400, body: { success: false, error: Messages.invalidCursor } });
      }
      // A's cursor is refused in B, before B's profile is even looked up.
      expect(await page(ids.bAlice!.id, `?cursor=${good}`, B.read)).toMatchObject({ status: 400, body: { error: Messages.invalidCursor } });
    });

    it('events of a merged profile belong to the survivor; a cursor issued before the merge goes on there', async () => {
      const org = await h.org('merge-events');
      await h.ingest([h.envelope(org.orgId, { type: 'identify', anonymousId: 'm-laptop', userId: 'mia', timestamp: minutesAgo(300) })]);
      await h.ingest(Array.from({ length: 6 }, (_, i) => h.envelope(org.orgId, { type: 'page', anonymousId: 'm-phone', timestamp: minutesAgo(200 - i) })));
      const phone = await h.profileOf(org.orgId, 'anonymous_id', 'm-phone');
      const mia = await h.profileOf(org.orgId, 'user_id', 'mia');
      const first = await page(phone.id, '?limit=2', org.read);
      expect(first.body).toMatchObject({ total: 6, has_more: true });
      await h.ingest([h.envelope(org.orgId, { type: 'identify', anonymousId: 'm-phone', userId: 'mia', timestamp: minutesAgo(100) })]);
      const next = await page(phone.id, `?limit=50&cursor=${first.body.next_cursor as string}`, org.read);
      expect(next.status).toBe(200);
      // The four older phone events, then mia's laptop identify: the stream is the survivor's now.
      expect(eventsOf(next)).toHaveLength(5);
      const all = await page(phone.canonical_id, '?limit=50', org.read);
      expect(all.body).toMatchObject({ total: 8 });
      expect(await page(mia.id, '?limit=50', org.read)).toMatchObject({ body: { total: 8, events: all.body.events } });
    });

    const invalid: Array<[string, string]> = [
      ['?limit=-5', ProfileMessages.invalidLimit],
      ['?limit=ten', ProfileMessages.invalidLimit],
      ['?offset=-1', ProfileMessages.invalidOffset],
      ['?offset=0.5', ProfileMessages.invalidOffset],
      ['?cursor=', Messages.invalidCursor],
      ['?precise_total=maybe', ProfileMessages.invalidPreciseTotal],
      [`?event_name=<201 characters>`, ProfileMessages.invalidEventName],
    ];
    it.each(invalid)('GET /v1-profiles/:id/events%s → 400 %s', async (shown, error) => {
      const query = shown.replace('<201 characters>', 'e'.repeat(201));
      expect(await page(pager.id, query)).toMatchObject({ status: 400, body: { success: false, error } });
    });
  });

  describe('search', () => {
    const search = (query: string, key = A.read) => h.get(`/search${query}`, key);
    const found = async (query: string, key = A.read) => {
      const res = await search(query, key);
      expect(res.status).toBe(200);
      const profiles = res.body.profiles as Item[];
      expect(res.body).toMatchObject({ success: true, count: profiles.length });
      return profiles.map((p) => p.id);
    };

    beforeAll(async () => {
      await h.ingest(Array.from({ length: 5 }, (_, i) => h.envelope(A.orgId, { type: 'page', anonymousId: `bulk-visitor-${i}`, timestamp: minutesAgo(70 + i) })));
      await h.ingest([h.envelope(A.orgId, { type: 'identify', anonymousId: 'pct-dev', userId: 'user_50%', timestamp: minutesAgo(70) })]);
    });

    const pct = async () => [(await h.profileOf(A.orgId, 'user_id', 'user_50%')).id];
    const cases: Array<[string, () => string, () => Promise<string[]> | string[]]> = [
      ['email, exact, any case and padding', () => '?email=%20ALICE@example.COM%20', () => [ids.alice!.id]],
      ['email, exact, no substring', () => '?email=alice@example', () => []],
      ['email, partial', () => '?email=EXAMPLE.com&partial=true', () => [ids.alice!.id]],
      ['user_id, exact', () => '?user_id=alice', () => [ids.alice!.id]],
      ['user_id, exact is case-sensitive', () => '?user_id=ALICE', () => []],
      ['user_id, partial is case-insensitive', () => '?user_id=LIC&partial=true', () => [ids.alice!.id]],
      ['anonymous_id, exact', () => '?anonymous_id=b-dev', () => [ids.bob!.id]],
      ['anonymous_id of a merged-away profile finds the survivor', () => '?anonymous_id=c-phone', () => [ids.carol!.id]],
      ['q, exact user id', () => '?q=carol', () => [ids.carol!.id]],
      ['query is q', () => '?query=carol', () => [ids.carol!.id]],
      ['q, exact email lower-cased', () => '?q=Carol@Shop.test', () => [ids.carol!.id]],
      ['q, exact phone in another notation', () => '?q=098765%2043210', () => [ids.alice!.id]],
      ['q, exact canonical_id', () => `?q=${ids.bob!.canonical_id}`, () => [ids.bob!.id]],
      ['q, partial canonical_id, any case', () => `?q=${ids.bob!.canonical_id.slice(6, 18).toUpperCase()}&partial=true`, () => [ids.bob!.id]],
      ['q, partial across signal types, de-duplicated', () => '?q=alic&partial=true', () => [ids.alice!.id]],
      ['q, no match', () => '?q=zzz-nobody', () => []],
      ['q, partial: % is literal', () => '?q=50%25&partial=true', pct],
      ['q, partial: _ is literal', () => '?q=r_5&partial=true', pct],
    ];
    it.each(cases)('%s', async (_name, query, expected) => {
      expect(await found(query())).toEqual(await expected());
    });

    it('finds the survivor by a merged-away canonical_id', async () => {
      expect(await found(`?q=${ids.cphone!.canonical_id}`)).toEqual([ids.carol!.id]);
      expect(await found(`?q=${ids.cphone!.canonical_id.slice(4, 16)}&partial=true`)).toEqual([ids.carol!.id]);
    });

    it('orders by last activity and honours limit (default 20, clamped to 50)', async () => {
      const all = await found('?q=bulk-visitor&partial=true');
      expect(all).toHaveLength(5);
      const rows = (await h.db('identity.profiles').whereIn('id', all).orderBy([{ column: 'last_seen_at', order: 'desc' }, { column: 'id', order: 'desc' }]).select('id')) as Array<{ id: string }>;
      expect(all).toEqual(rows.map((r) => r.id));
      expect(await found('?q=bulk-visitor&partial=true&limit=2')).toEqual(all.slice(0, 2));
      expect(await found('?q=bulk-visitor&partial=true&limit=500')).toEqual(all);
    });

    it('returns list items', async () => {
      const res = await search('?user_id=alice');
      expect((res.body.profiles as Item[])[0]).toMatchObject({ id: ids.alice!.id, canonical_id: ids.alice!.canonical_id, identified: true, event_count: 3, session_count: 2 });
    });

    const invalid: Array<[string, string]> = [
      ['', Messages.searchParameterRequired],
      ['?partial=true', Messages.searchParameterRequired],
      ['?q=', Messages.searchParameterRequired],
      ['?q=<201 characters>', ProfileMessages.searchTooLong],
      ['?query=<201 characters>', ProfileMessages.searchTooLong],
      ['?email=a@b.co&q=x', ProfileMessages.searchParameterConflict],
      ['?q=x&partial=yes', ProfileMessages.invalidPartial],
      ['?q=x&limit=-1', ProfileMessages.invalidLimit],
      ['?q=x&limit=abc', ProfileMessages.invalidLimit],
    ];
    it.each(invalid)('GET /v1-profiles/search%s → 400 %s', async (shown, error) => {
      expect(await search(shown.replace('<201 characters>', 'x'.repeat(201)))).toMatchObject({ status: 400, body: { success: false, error } });
    });
  });

  describe('organisations never see each other’s profiles', () => {
    it('lists and searches only their own', async () => {
      const listed = ((await h.get('?limit=100', B.read)).body.profiles as Item[]).map((p) => p.id);
      expect(listed).toEqual([ids.bAlice!.id]);
      expect(((await h.get('/search?user_id=alice', B.read)).body.profiles as Item[]).map((p) => p.id)).toEqual([ids.bAlice!.id]);
      expect(((await h.get('/search?user_id=alice', A.read)).body.profiles as Item[]).map((p) => p.id)).toEqual([ids.alice!.id]);
      expect((await h.get(`/search?q=${ids.alice!.canonical_id}`, B.read)).body).toMatchObject({ profiles: [], count: 0 });
    });

    it.each([
      ['detail', ''],
      ['events', '/events'],
      ['identities', '/identities'],
    ])('%s of another organisation’s profile is 404 Profile not found, by id and by canonical_id', async (_name, suffix) => {
      for (const id of [ids.alice!.id, ids.alice!.canonical_id, ids.cphone!.id]) {
        expect(await h.get(`/${id}${suffix}`, B.read)).toMatchObject({ status: 404, body: { success: false, error: Messages.profileNotFound } });
        expect(await h.get(`/${id}${suffix}`, B.admin)).toMatchObject({ status: 404, body: { success: false, error: Messages.profileNotFound } });
      }
    });
  });

  describe('authentication and unmatched routes', () => {
    it.each([
      ['no key', undefined, 401, Messages.missingAuthorization],
      ['an unknown key', 'uk_read_0000000000000000000000000000000000000000', 401, Messages.invalidApiKey],
      ['a write key', 'write', 403, Messages.insufficientPermissions('read or admin')],
    ] as const)('GET routes with %s are refused', async (_name, key, status, error) => {
      const k = key === 'write' ? A.write : key;
      for (const path of ['', '/search?q=a', `/${ids.alice!.id}`, `/${ids.alice!.id}/events`, `/${ids.alice!.id}/identities`]) {
        expect(await h.get(path, k)).toMatchObject({ status, body: { success: false, error } });
      }
    });

    it.each([
      ['GET', '/merge'],
      ['PUT', '/merge'],
      ['DELETE', '/merge'],
      ['POST', ''],
      ['PUT', ''],
      ['DELETE', '/00000000-0000-4000-8000-000000000000'],
      ['PATCH', '/00000000-0000-4000-8000-000000000000'],
      ['POST', '/search'],
      ['POST', '/00000000-0000-4000-8000-000000000000/events'],
      ['GET', '/00000000-0000-4000-8000-000000000000/unknown'],
      ['GET', '/a/b/c/d'],
      ['GET', '/00000000-0000-4000-8000-000000000000/events/extra'],
    ])('%s /v1-profiles%s → 404 Not found, whatever the key', async (method, path) => {
      for (const key of [A.admin, undefined]) {
        expect(await h.send(method, path, key, method === 'GET' || method === 'DELETE' ? undefined : {})).toMatchObject({
          status: 404,
          body: { success: false, error: Messages.notFound },
        });
      }
    });
  });
});
