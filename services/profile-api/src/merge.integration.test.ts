import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BodyLimitHints, Messages } from '@svc/contracts';
import { processBatch } from '@svc/identity-resolver';
import { createDb, type Db } from '@svc/runtime';
import { describeWithPostgres } from '@svc/testkit';
import { ProfileMessages } from './messages';
import { ProfileApiHarness, minutesAgo, type OrgKeys } from './test-support/harness';

/**
 * POST /v1-profiles/merge over real PostgreSQL: the resolver's merge routine
 * behind it, its audit row, its refusals, and its safety while the resolver
 * ingests events for the very profiles being merged.
 */
describeWithPostgres('Profiles API admin merge on PostgreSQL', () => {
  const h = new ProfileApiHarness();
  let ingestDb: Db;
  let A: OrgKeys;
  let B: OrgKeys;

  beforeAll(async () => {
    await h.setUp();
    // Ingestion runs on a pool of its own, as the resolver would.
    ingestDb = createDb({ url: h.t.url, poolMax: 8, applicationName: 'test-ingest' });
    [A, B] = [await h.org('A'), await h.org('B')];
  });
  afterAll(async () => {
    await ingestDb?.destroy();
    await h.tearDown();
  });

  const merge = (body: unknown, key = A.admin) => h.post('/merge', key, body);
  const keyIdOf = async (orgId: string) =>
    ((await h.db('accounts.api_keys').where({ org_id: orgId, type: 'admin' }).first('id')) as { id: string }).id;

  /** An identified profile and an anonymous one, each with a few events, in `org`. */
  async function pair(org: OrgKeys, tag: string) {
    await h.ingest([
      h.envelope(org.orgId, { type: 'identify', anonymousId: `${tag}-laptop`, userId: `${tag}-user`, traits: { email: `${tag}@example.com` }, timestamp: minutesAgo(90), context: { session: { id: `${tag}-s1` } } }),
      h.envelope(org.orgId, { type: 'track', event: 'viewed', anonymousId: `${tag}-laptop`, userId: `${tag}-user`, timestamp: minutesAgo(80), context: { session: { id: `${tag}-s1` } } }),
      h.envelope(org.orgId, { type: 'page', anonymousId: `${tag}-phone`, timestamp: minutesAgo(70), context: { session: { id: `${tag}-s2` }, campaign: { source: 'ads', medium: 'cpc', gclid: `${tag}-gclid` } } }),
      h.envelope(org.orgId, { type: 'page', anonymousId: `${tag}-phone`, timestamp: minutesAgo(60), context: { session: { id: `${tag}-s2` } } }),
    ]);
    return { target: await h.profileOf(org.orgId, 'user_id', `${tag}-user`), source: await h.profileOf(org.orgId, 'anonymous_id', `${tag}-phone`) };
  }

  it('merges, says what was merged, and audits who, when and why', async () => {
    const { source, target } = await pair(A, 'm1');
    const started = new Date();
    const res = await merge({ source_profile_id: source.canonical_id, target_profile_id: target.id, reason: 'Same person: support ticket 4711' });
    expect(res).toMatchObject({
      status: 200,
      body: {
        success: true,
        merged: { source_profile_id: source.id, target_profile_id: target.id, reason: 'Same person: support ticket 4711', merged_at: expect.any(String) },
      },
    });
    const audit = (await h.db('identity.merges').where({ org_id: A.orgId, source_profile_id: source.id })) as Array<Record<string, unknown>>;
    expect(audit).toEqual([
      expect.objectContaining({ target_profile_id: target.id, reason: 'admin', actor: `admin-key:${await keyIdOf(A.orgId)}`, note: 'Same person: support ticket 4711', message_id: null }),
    ]);
    expect((audit[0]!.merged_at as Date).getTime()).toBeGreaterThanOrEqual(started.getTime() - 1_000);
    expect(new Date((res.body.merged as { merged_at: string }).merged_at)).toEqual(audit[0]!.merged_at);

    // The survivor has everything; the source's ids now stand for it.
    expect(await h.db('identity.profiles').where({ id: source.id }).first('merged_into')).toEqual({ merged_into: target.id });
    const detail = await h.get(`/${source.id}`, A.read);
    expect(detail.body.profile).toMatchObject({ id: target.id, event_count: 4, stats: { total_sessions: 2 }, first_touch: { source: 'ads' } });
    expect((await h.get(`/${target.id}/events`, A.read)).body).toMatchObject({ total: 4 });
    expect((await h.get(`/${source.canonical_id}/identities`, A.read)).body.identities).toMatchObject({ click_ids: [{ click_id: 'm1-gclid' }] });
    expect(((await h.get('/search?anonymous_id=m1-phone', A.read)).body.profiles as Array<{ id: string }>).map((p) => p.id)).toEqual([target.id]);
    expect(((await h.get('?limit=100', A.read)).body.profiles as Array<{ id: string }>).map((p) => p.id)).not.toContain(source.id);
    // Reported on profiles.changes through the resolver's outbox.
    const changes = (await h.db('identity.outbox').where({ topic: 'profilesChanges' }).select('payload')) as Array<{ payload: { profileId: string; change: string } }>;
    expect(changes.map((c) => c.payload)).toEqual(
      expect.arrayContaining([expect.objectContaining({ profileId: source.id, change: 'merged' }), expect.objectContaining({ profileId: target.id, change: 'updated' })]),
    );
  });

  it('records a merge without a reason with a null reason', async () => {
    const { source, target } = await pair(A, 'm2');
    expect((await merge({ source_profile_id: source.id, target_profile_id: target.canonical_id })).body).toMatchObject({ merged: { reason: null } });
    expect(await h.db('identity.merges').where({ source_profile_id: source.id }).first('note')).toEqual({ note: null });
  });

  describe('refusals', () => {
    type Pair = Awaited<ReturnType<typeof pair>>;
    let p: Pair;
    let inB: Pair;
    let already: Pair;
    beforeAll(async () => {
      p = await pair(A, 'r1');
      inB = await pair(B, 'r2');
      already = await pair(A, 'r3');
      expect((await merge({ source_profile_id: already.source.id, target_profile_id: already.target.id })).status).toBe(200);
    });
    const unknown = '00000000-0000-4000-8000-000000000000';

    it.each([
      ['the same id twice', () => ({ source_profile_id: p.source.id, target_profile_id: p.source.id })],
      ['an id and its own canonical_id', () => ({ source_profile_id: p.source.id, target_profile_id: p.source.canonical_id })],
      ['a merged-away profile into its survivor', () => ({ source_profile_id: already.source.id, target_profile_id: already.target.canonical_id })],
      ['the same unknown id twice', () => ({ source_profile_id: unknown, target_profile_id: unknown })],
    ])('400 Cannot merge a profile into itself: %s', async (_name, body) => {
      expect(await merge(body())).toMatchObject({ status: 400, body: { success: false, error: ProfileMessages.mergeIntoItself } });
    });

    it.each([
      ['unknown source', () => ({ source_profile_id: unknown, target_profile_id: p.target.id })],
      ['unknown target', () => ({ source_profile_id: p.source.id, target_profile_id: 'prf_00000000000000000000000000' })],
      ['source of another organisation', () => ({ source_profile_id: inB.source.id, target_profile_id: p.target.id })],
      ['target of another organisation', () => ({ source_profile_id: p.source.id, target_profile_id: inB.target.canonical_id })],
      ['both of another organisation', () => ({ source_profile_id: inB.source.id, target_profile_id: inB.target.id })],
      ['free text ids', () => ({ source_profile_id: 'someone', target_profile_id: 'someone else' })],
    ])('404 One or both profiles not found: %s', async (_name, body) => {
      expect(await merge(body())).toMatchObject({ status: 404, body: { success: false, error: Messages.mergeProfilesNotFound } });
    });

    it('another organisation’s admin key cannot merge them either', async () => {
      expect(await merge({ source_profile_id: p.source.id, target_profile_id: p.target.id }, B.admin)).toMatchObject({ status: 404, body: { error: Messages.mergeProfilesNotFound } });
    });

    it.each([
      ['invalid JSON', '{"source_profile_id":', Messages.invalidJson],
      ['empty body', '', Messages.emptyBody],
      ['an array', '[]', ProfileMessages.mergeBodyNotObject],
      ['no source', '{"target_profile_id":"x"}', ProfileMessages.mergeFieldRequired('source_profile_id')],
      ['no target', '{"source_profile_id":"x"}', ProfileMessages.mergeFieldRequired('target_profile_id')],
      ['numeric source', '{"source_profile_id":1,"target_profile_id":"x"}', ProfileMessages.mergeFieldInvalid('source_profile_id')],
      ['numeric reason', '{"source_profile_id":"a","target_profile_id":"b","reason":5}', ProfileMessages.mergeReasonInvalid],
    ])('400 for %s', async (_name, body, error) => {
      expect(await merge(body)).toMatchObject({ status: 400, body: { success: false, error } });
    });

    it('400 when the body is not JSON', async () => {
      expect(await h.send('POST', '/merge', A.admin, undefined, { headers: { 'content-type': 'text/plain' } })).toMatchObject({ status: 400, body: { error: Messages.contentTypeNotJson } });
    });

    it('413 for a body over 256 KiB, with limit_bytes 262144', async () => {
      const body = JSON.stringify({ source_profile_id: p.source.id, target_profile_id: p.target.id, reason: 'x'.repeat(262_144) });
      expect(await merge(body)).toMatchObject({
        status: 413,
        body: { success: false, error: Messages.bodyTooLarge(262_144), limit_bytes: 262_144, hint: BodyLimitHints.generic },
      });
    });

    it.each([
      ['a read key', 'read', 403, Messages.insufficientPermissions('admin')],
      ['a write key', 'write', 403, Messages.insufficientPermissions('admin')],
      ['no key', 'none', 401, Messages.missingAuthorization],
    ] as const)('refuses %s', async (_name, key, status, error) => {
      const res = await h.post('/merge', key === 'none' ? undefined : A[key], { source_profile_id: p.source.id, target_profile_id: p.target.id });
      expect(res).toMatchObject({ status, body: { success: false, error } });
      expect(error).toBe(key === 'none' ? 'Missing Authorization header' : 'Insufficient permissions: this operation requires an admin key');
    });

    it('changed nothing while refusing', async () => {
      expect(await h.db('identity.profiles').whereIn('id', [p.source.id, p.target.id]).whereNotNull('merged_into').count({ n: '*' })).toEqual([{ n: 0 }]);
    });
  });

  describe('under concurrent ingestion for the same profiles', () => {
    async function expectConsistent(org: OrgKeys, survivor: string, merged: string, total: number): Promise<void> {
      const n = async (sql: string, bindings: string[] = [org.orgId]) =>
        Number(((await h.db.raw(sql, bindings)) as { rows: Array<{ n: number }> }).rows[0]?.n ?? 0);
      expect(await n('select count(*) as n from identity.events where org_id = ?')).toBe(total);
      expect(await n('select count(*) as n from identity.events where org_id = ? and profile_id <> ?', [org.orgId, survivor])).toBe(0);
      expect(await h.db('identity.profiles').where({ id: merged }).first('merged_into')).toEqual({ merged_into: survivor });
      // Every event, signal, click, fingerprint and session sits on a live profile; the counters add up.
      for (const table of ['events', 'identity_signals', 'click_ids', 'fingerprints', 'profile_sessions']) {
        const stranded = await n(`select count(*) as n from identity.${table} x join identity.profiles p on p.id = x.profile_id where x.org_id = ? and p.merged_into is not null`);
        expect({ table, stranded }).toEqual({ table, stranded: 0 });
      }
      expect(await n('select sum(event_count) as n from identity.profiles where org_id = ? and merged_into is null')).toBe(total);
      expect(await n('select count(distinct session_id) as n from identity.profile_sessions where org_id = ?')).toBe(
        await n('select session_count as n from identity.profiles where id = ?', [survivor]),
      );
      // And the API says the same, by the merged-away id.
      expect((await h.get(`/${merged}/events?limit=1`, org.read)).body).toMatchObject({ total });
    }

    const traffic = (org: OrgKeys, n: number, tag: string) =>
      Array.from({ length: n }, (_, i) =>
        i % 2 === 0
          ? h.envelope(org.orgId, { type: 'track', event: 'viewed', anonymousId: 'cc-phone', timestamp: minutesAgo(30 - i / 100), context: { session: { id: `cc-${tag}-${i % 3}` }, consent: true, fingerprint: { hash: `fp-${i % 4}` } } })
          : h.envelope(org.orgId, { type: 'track', event: 'viewed', anonymousId: 'cc-laptop', userId: 'cc-user', timestamp: minutesAgo(30 - i / 100), context: { campaign: { source: 's', gclid: `g-${tag}-${i}` } } }),
      );

    /** A fresh organisation with the two profiles to merge: the anonymous phone (source) and cc-user's (target). */
    const phoneAndUser = async (name: string) => {
      const org = await h.org(name);
      await h.ingest([
        h.envelope(org.orgId, { type: 'identify', anonymousId: 'cc-laptop', userId: 'cc-user', timestamp: minutesAgo(40) }),
        h.envelope(org.orgId, { type: 'page', anonymousId: 'cc-phone', timestamp: minutesAgo(39) }),
      ]);
      const source = await h.profileOf(org.orgId, 'anonymous_id', 'cc-phone');
      const target = await h.profileOf(org.orgId, 'user_id', 'cc-user');
      return { org, source, target };
    };

    it('a merge waits for an ingesting transaction that holds the profile, then moves what it wrote', async () => {
      const { org, source, target } = await phoneAndUser('held');
      const trx = await ingestDb.transaction();
      let merging: ReturnType<typeof merge> | undefined;
      try {
        await processBatch(trx, traffic(org, 20, 'held'), { hashes: h.hashes });
        merging = merge({ source_profile_id: source.id, target_profile_id: target.id, reason: 'held' }, org.admin);
        await waitFor(async () =>
          Number(((await h.db.raw(`select count(*) as n from pg_stat_activity where application_name = 'svc-test' and wait_event_type = 'Lock' and query like '%for update%'`)) as { rows: Array<{ n: number }> }).rows[0]?.n) > 0,
        );
        await trx.commit();
      } catch (err) {
        await trx.rollback();
        throw err;
      }
      expect(await merging).toMatchObject({ status: 200, body: { merged: { source_profile_id: source.id, target_profile_id: target.id } } });
      await expectConsistent(org, target.id, source.id, 22);
    });

    it('eight batches racing a merge: one survivor with every event, counters that add up', async () => {
      const { org, source, target } = await phoneAndUser('race');
      const batches = Array.from({ length: 8 }, (_, b) => traffic(org, 30, `race${b}`));
      const ingesting = batches.map(async (batch, b) => {
        await new Promise((r) => setTimeout(r, b * 3));
        await h.ingest(batch, ingestDb);
      });
      await new Promise((r) => setTimeout(r, 10));
      const merged = await merge({ source_profile_id: source.canonical_id, target_profile_id: target.canonical_id, reason: 'race' }, org.admin);
      await Promise.all(ingesting);
      expect(merged).toMatchObject({ status: 200, body: { merged: { source_profile_id: source.id, target_profile_id: target.id } } });
      await expectConsistent(org, target.id, source.id, 2 + 8 * 30);
      expect(await h.db('identity.merges').where({ org_id: org.orgId, reason: 'admin' }).count({ n: '*' })).toEqual([{ n: 1 }]);
    });
  });
});

async function waitFor(cond: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
