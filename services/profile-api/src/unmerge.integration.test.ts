import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Messages } from '@svc/contracts';
import { startUnmerging } from '@svc/identity-resolver';
import { describeWithPostgres, testLogger } from '@svc/testkit';
import { ProfileApiHarness, minutesAgo, type OrgKeys } from './test-support/harness';

interface Entry {
  id: string;
  reason: string;
  source_profile_id: string;
  target_profile_id: string;
  message_id: string | null;
  undone_at: string | null;
  undone_by: string | null;
}

/**
 * POST and GET /v1-profiles/:id/unmerge over real PostgreSQL, carried out by
 * the resolver's unmerge worker: 202 then done, the same request when asked
 * again, both profiles readable again, the journal marked, and every refusal
 * (404, 409, 400, 403) with its exact string.
 */
describeWithPostgres('Profiles API unmerge', () => {
  const h = new ProfileApiHarness();
  let A: OrgKeys;
  let B: OrgKeys;
  let worker: ReturnType<typeof startUnmerging>;
  const p: Record<string, string> = {};
  const entries: Record<string, string> = {};

  beforeAll(async () => {
    await h.setUp();
    // A pass when a test asks for one (the interval is out of the way).
    worker = startUnmerging({ db: h.db, logger: testLogger('unmerge'), intervalMs: 3_600_000 });
    [A, B] = [await h.org('A'), await h.org('B')];
    const e = (event: Parameters<typeof h.envelope>[1], m: number, messageId: string) => h.envelope(A.orgId, { ...event, timestamp: minutesAgo(m), messageId });
    await h.ingest([
      e({ type: 'identify', anonymousId: 'laptop', userId: 'alice', traits: { email: 'alice@example.com' } }, 60, 'm-laptop'),
      e({ type: 'identify', anonymousId: 'phone', traits: { email: 'phone@example.com' } }, 59, 'm-phone'),
      e({ type: 'page', anonymousId: 'watch' }, 58, 'm-watch'),
    ]);
    for (const [name, type, value] of [['alice', 'user_id', 'alice'], ['phone', 'anonymous_id', 'phone'], ['watch', 'anonymous_id', 'watch']] as const) {
      p[name] = (await h.db('identity.identity_signals').where({ org_id: A.orgId, signal_type: type, signal_value: value }).first('profile_id')).profile_id as string;
    }
    // The phone signs in as alice (merged into her); then the watch shows the phone's email (merged into alice
    // too, because of the phone: undone with it).
    await h.ingest([e({ type: 'identify', anonymousId: 'phone', userId: 'alice' }, 50, 'm-signin')]);
    await h.ingest([e({ type: 'track', event: 'view', anonymousId: 'watch', traits: { email: 'phone@example.com' } }, 40, 'm-watch-email')]);
    for (const m of (await h.db('identity.merges').where({ org_id: A.orgId })) as Array<{ id: number; message_id: string }>) entries[m.message_id] = String(m.id);
    expect(Object.keys(entries).sort()).toEqual(['m-signin', 'm-watch-email']);
  });
  afterAll(async () => {
    await worker.stop();
    await h.tearDown();
  });

  const unmerge = (id: string, body: unknown, key = A.admin) => h.post(`/${encodeURIComponent(id)}/unmerge`, key, body);
  const status = (id: string, key = A.admin) => h.get(`/${encodeURIComponent(id)}/unmerge`, key);
  const journal = async (id: string) => (await h.get(`/${encodeURIComponent(id)}/merges`, A.read)).body.merges as Entry[];

  let unmergeId: string;

  it('202: records the request, pending; asked again while pending, the same request', async () => {
    const res = await unmerge(p.alice!, { merge_id: entries['m-signin'] });
    expect(res.status).toBe(202);
    const keyId = ((await h.db('accounts.api_keys').where({ org_id: A.orgId, type: 'admin' }).first('id')) as { id: string }).id;
    expect(res.body).toEqual({
      success: true,
      unmerge: {
        id: expect.any(String),
        merge_id: entries['m-signin'],
        status: 'pending',
        failure_reason: null,
        actor: `admin-key:${keyId}`,
        requested_at: expect.any(String),
        completed_at: null,
        profile_ids: null,
      },
    });
    unmergeId = (res.body.unmerge as { id: string }).id;
    // By a merged-away id of the profile, and with the id as a number: the same request.
    const again = await unmerge(p.phone!, { merge_id: Number(entries['m-signin']) });
    expect(again).toMatchObject({ status: 202, body: { unmerge: { id: unmergeId, status: 'pending' } } });
    expect(await status(unmergeId)).toMatchObject({ status: 200, body: { success: true, unmerge: { id: unmergeId, status: 'pending' } } });
  });

  it('done once the resolver carried it out: both profiles back, each with its own events', async () => {
    await worker.pass();
    const res = await status(unmergeId);
    expect(res).toMatchObject({ status: 200, body: { unmerge: { status: 'done', profile_ids: [p.phone, p.alice], completed_at: expect.any(String) } } });
    // Asked again once done: the same request, 200.
    expect(await unmerge(p.alice!, { merge_id: entries['m-signin'] })).toMatchObject({ status: 200, body: { unmerge: { id: unmergeId, status: 'done' } } });

    const phone = await h.get(`/${p.phone}`, A.read);
    expect(phone).toMatchObject({ status: 200, body: { profile: { id: p.phone, user_id: null } } });
    const events = (await h.get(`/${p.phone}/events`, A.read)).body.events as Array<{ event_name: string }>;
    // The phone, and the watch that showed the phone's email: merged into the phone now, not into alice.
    expect(events.map((e) => e.event_name).sort()).toEqual(['$identify', '$pageview', 'view']);
    expect((await h.get(`/${p.watch}`, A.read)).body).toMatchObject({ profile: { id: p.phone } });
    const alice = (await h.get(`/${p.alice}/events`, A.read)).body.events as Array<{ event_name: string }>;
    expect(alice.map((e) => e.event_name)).toEqual(['$identify', '$identify']);
  });

  it('marks the entries undone in both profiles’ journals, and records the merge the resolution made instead', async () => {
    const aliceJournal = await journal(p.alice!);
    expect(aliceJournal.map((m) => [m.message_id, m.undone_by])).toEqual([
      ['m-watch-email', unmergeId],
      ['m-signin', unmergeId],
    ]);
    expect(aliceJournal.every((m) => m.undone_at !== null)).toBe(true);
    const phoneJournal = await journal(p.phone!);
    expect(phoneJournal.map((m) => [m.message_id, m.source_profile_id, m.target_profile_id, m.undone_by])).toEqual([
      ['m-watch-email', p.watch, p.phone, null],
      ['m-watch-email', p.watch, p.alice, unmergeId],
      ['m-signin', p.phone, p.alice, unmergeId],
    ]);
  });

  describe('refusals', () => {
    it.each([
      ['an unknown profile', () => unmerge('00000000-0000-4000-8000-000000000000', { merge_id: entries['m-signin'] }), 404, Messages.profileNotFound],
      ['another organisation’s profile', () => unmerge(p.alice!, { merge_id: entries['m-signin'] }, B.admin), 404, Messages.profileNotFound],
      ['an entry of no journal', () => unmerge(p.alice!, { merge_id: '987654321' }), 404, Messages.mergeNotFound],
      ['a body that is not an object', () => unmerge(p.alice!, ['1']), 400, Messages.unmergeBodyNotObject],
      ['no merge_id', () => unmerge(p.alice!, {}), 400, Messages.unmergeMergeIdRequired],
      ['a merge_id that is no entry id', () => unmerge(p.alice!, { merge_id: '12a' }), 400, Messages.unmergeMergeIdInvalid],
      ['a negative merge_id', () => unmerge(p.alice!, { merge_id: -3 }), 400, Messages.unmergeMergeIdInvalid],
      ['a read key', () => unmerge(p.alice!, { merge_id: entries['m-signin'] }, A.read), 403, Messages.insufficientPermissions('admin')],
      ['an unknown unmerge', () => status('00000000-0000-4000-8000-000000000000'), 404, Messages.unmergeNotFound],
      ['another organisation’s unmerge', () => status(unmergeId, B.admin), 404, Messages.unmergeNotFound],
      ['the status with a read key', () => status(unmergeId, A.read), 403, Messages.insufficientPermissions('admin')],
    ])('%s', async (_, ask, code, error) => {
      expect(await ask()).toMatchObject({ status: code, body: { success: false, error } });
    });

    it('409 Merge already undone for an entry another unmerge undid, naming it', async () => {
      const res = await unmerge(p.alice!, { merge_id: entries['m-watch-email'] });
      expect(res).toMatchObject({ status: 409, body: { success: false, error: Messages.mergeAlreadyUndone, undone_by: unmergeId } });
    });

    it('404 Merge not found for an entry of another profile’s journal', async () => {
      // The entry the resolution recorded (the watch into the phone) is the phone's, not alice's.
      const phoneEntry = (await journal(p.phone!))[0]!.id;
      expect(await unmerge(p.alice!, { merge_id: phoneEntry })).toMatchObject({ status: 404, body: { success: false, error: Messages.mergeNotFound } });
    });
  });
});
