import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Messages } from '@svc/contracts';
import { eventIdFor } from '@svc/identity';
import { describeWithPostgres } from '@svc/testkit';
import { ProfileApiHarness, minutesAgo, type OrgKeys } from './test-support/harness';

interface Entry {
  id: string;
  reason: string;
  signal_type: string | null;
  source_profile_id: string;
  source_canonical_id: string;
  target_profile_id: string;
  actor: string;
  event_id: string | null;
  message_id: string | null;
  note: string | null;
  merged_at: string;
}

/**
 * GET /v1-profiles/:id/merges over real PostgreSQL: every merge that made a
 * profile (trait, identify, alias, admin), what caused it, newest first,
 * keyset-paged, for the survivor whichever of its ids is asked, and for no
 * other organisation.
 */
describeWithPostgres('Profiles API merge journal', () => {
  const h = new ProfileApiHarness();
  let A: OrgKeys;
  let B: OrgKeys;
  const p: Record<string, { id: string; canonical_id: string }> = {};

  beforeAll(async () => {
    await h.setUp();
    [A, B] = [await h.org('A'), await h.org('B')];
    const e = (event: Parameters<typeof h.envelope>[1], m: number, messageId: string) => h.envelope(A.orgId, { ...event, timestamp: minutesAgo(m), messageId });
    // Four profiles: the laptop (identified as alice), the phone, the tablet, and an old account.
    await h.ingest([
      e({ type: 'identify', anonymousId: 'laptop', userId: 'alice', traits: { email: 'alice@example.com' } }, 60, 'm-laptop'),
      e({ type: 'page', anonymousId: 'phone' }, 59, 'm-phone'),
      e({ type: 'page', anonymousId: 'tablet' }, 58, 'm-tablet'),
      e({ type: 'identify', anonymousId: 'old-device', userId: 'alice-2019' }, 57, 'm-old'),
    ]);
    for (const [name, type, value] of [['alice', 'user_id', 'alice'], ['phone', 'anonymous_id', 'phone'], ['tablet', 'anonymous_id', 'tablet'], ['old', 'user_id', 'alice-2019']] as const) {
      p[name] = await h.profileOf(A.orgId, type, value);
    }
    // The phone's visitor types alice's email (trait), the tablet logs in (identify), alice's old account is aliased.
    await h.ingest([e({ type: 'track', event: 'signup_form', anonymousId: 'phone', traits: { email: 'alice@example.com' } }, 50, 'm-trait')]);
    await h.ingest([e({ type: 'identify', anonymousId: 'tablet', userId: 'alice' }, 40, 'm-identify')]);
    await h.ingest([e({ type: 'alias', anonymousId: 'laptop', userId: 'alice', previousId: 'alice-2019' }, 30, 'm-alias')]);
    await h.ingest([h.envelope(A.orgId, { type: 'page', anonymousId: 'kiosk', timestamp: minutesAgo(20) })]);
    p.kiosk = await h.profileOf(A.orgId, 'anonymous_id', 'kiosk');
    expect((await h.post('/merge', A.admin, { source_profile_id: p.kiosk.id, target_profile_id: p.alice!.id, reason: 'ticket 17' })).status).toBe(200);
  });
  afterAll(() => h.tearDown());

  const journal = async (id: string, query = '', key = A.read) => h.get(`/${encodeURIComponent(id)}/merges${query}`, key);

  it('lists every merge that made the profile, newest first, with what caused it', async () => {
    const res = await journal(p.alice!.id);
    expect(res.status).toBe(200);
    const keyId = ((await h.db('accounts.api_keys').where({ org_id: A.orgId, type: 'admin' }).first('id')) as { id: string }).id;
    const entries = res.body.merges as Entry[];
    expect(entries.map((m) => [m.reason, m.signal_type, m.source_profile_id, m.message_id, m.actor])).toEqual([
      ['admin', null, p.kiosk!.id, null, `admin-key:${keyId}`],
      ['alias', 'user_id', p.old!.id, 'm-alias', 'identity-resolver'],
      ['identify', 'anonymous_id', p.tablet!.id, 'm-identify', 'identity-resolver'],
      ['trait', 'anonymous_id', p.phone!.id, 'm-trait', 'identity-resolver'],
    ]);
    expect(entries[0]).toMatchObject({ note: 'ticket 17', event_id: null, source_canonical_id: p.kiosk!.canonical_id, target_profile_id: p.alice!.id });
    expect(entries[1]).toMatchObject({ event_id: eventIdFor(A.orgId, 'm-alias'), note: null });
    expect(entries.every((m) => /^\d+$/.test(m.id) && !Number.isNaN(Date.parse(m.merged_at)))).toBe(true);
    expect(res.body).toMatchObject({ success: true, limit: 20, has_more: false, next_cursor: null });
  });

  it.each([
    ['a merged-away id', () => p.phone!.id],
    ['a merged-away canonical_id', () => p.tablet!.canonical_id],
    ['the survivor’s canonical_id', () => p.alice!.canonical_id],
  ])('answers the survivor’s journal for %s', async (_, id) => {
    const res = await journal(id());
    expect((res.body.merges as Entry[]).map((m) => m.source_profile_id)).toEqual([p.kiosk!.id, p.old!.id, p.tablet!.id, p.phone!.id]);
  });

  it('pages with a cursor, older entries after newer, each once', async () => {
    const first = await journal(p.alice!.id, '?limit=3');
    expect(first.body).toMatchObject({ limit: 3, has_more: true });
    expect(first.body.merges as Entry[]).toHaveLength(3);
    const second = await journal(p.alice!.id, `?limit=3&cursor=${encodeURIComponent(String(first.body.next_cursor))}`);
    expect(second.body).toMatchObject({ has_more: false, next_cursor: null });
    expect([...(first.body.merges as Entry[]), ...(second.body.merges as Entry[])].map((m) => m.source_profile_id)).toEqual([p.kiosk!.id, p.old!.id, p.tablet!.id, p.phone!.id]);
    // The cursor names the journal, not the id it was asked by: a merged-away id reads on from it.
    const viaPhone = await journal(p.phone!.id, `?limit=3&cursor=${encodeURIComponent(String(first.body.next_cursor))}`);
    expect(viaPhone.body.merges).toEqual(second.body.merges);
  });

  it('is empty for a profile nothing was merged into', async () => {
    await h.ingest([h.envelope(A.orgId, { type: 'page', anonymousId: 'loner' })]);
    const loner = await h.profileOf(A.orgId, 'anonymous_id', 'loner');
    expect((await journal(loner.id)).body).toEqual({ success: true, merges: [], limit: 20, has_more: false, next_cursor: null });
  });

  describe('refusals', () => {
    it.each([
      ['an unknown id', () => journal('00000000-0000-4000-8000-000000000000')],
      ['another organisation’s profile', () => journal(p.alice!.id, '', B.read)],
    ])('404 Profile not found for %s', async (_, ask) => {
      expect(await ask()).toMatchObject({ status: 404, body: { success: false, error: Messages.profileNotFound } });
    });

    it.each([
      ['garbage', 'not-a-cursor'],
      ['empty', ''],
    ])('400 Invalid cursor for a %s cursor', async (_, cursor) => {
      expect(await journal(p.alice!.id, `?cursor=${cursor}`)).toMatchObject({ status: 400, body: { error: Messages.invalidCursor } });
    });

    it('400 Invalid cursor for a cursor of another profile’s journal', async () => {
      await h.ingest([
        h.envelope(A.orgId, { type: 'page', anonymousId: 'x1' }),
        h.envelope(A.orgId, { type: 'page', anonymousId: 'x2' }),
      ]);
      const [x1, x2] = [await h.profileOf(A.orgId, 'anonymous_id', 'x1'), await h.profileOf(A.orgId, 'anonymous_id', 'x2')];
      await h.ingest([h.envelope(A.orgId, { type: 'identify', anonymousId: 'x1', userId: 'xavier' }), h.envelope(A.orgId, { type: 'identify', anonymousId: 'x2', userId: 'xavier' })]);
      expect(x2.id).not.toBe(x1.id);
      const cursor = (await journal(p.alice!.id, '?limit=1')).body.next_cursor as string;
      expect(await journal(x1.id, `?cursor=${encodeURIComponent(cursor)}`)).toMatchObject({ status: 400, body: { error: Messages.invalidCursor } });
    });

    it('400 for a bad limit, as the other routes', async () => {
      expect((await journal(p.alice!.id, '?limit=0')).status).toBe(400);
    });

    it('403 for a write key', async () => {
      expect((await journal(p.alice!.id, '', A.write)).status).toBe(403);
    });
  });
});
