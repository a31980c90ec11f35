import http from 'node:http';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { BodyLimitHints, Limits, Messages } from '@svc/contracts';
import { describeWithPostgres } from '@svc/testkit';
import { ProfileApiHarness, minutesAgo, type OrgKeys, type Reply } from './test-support/harness';

/**
 * Rate limits and the body cap of /v1-profiles. Buckets are per
 * (organisation, client IP) and per fixed minute: each scenario takes a fresh
 * organisation, and runs again (once) with another fresh one when its burst
 * straddled a minute boundary, which resets the window mid-burst.
 */
describeWithPostgres('Profiles API limits on PostgreSQL', () => {
  const h = new ProfileApiHarness();
  let profileId = '';

  beforeAll(async () => {
    await h.setUp();
  });
  afterAll(() => h.tearDown());

  /** Runs `scenario` with a fresh organisation; again if a minute boundary passed during it. */
  async function inOneWindow(scenario: (org: OrgKeys, ip: string) => Promise<void>, cap: number | null = null): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const org = await h.org(`limits-${attempt}`, cap);
      await h.ingest([h.envelope(org.orgId, { type: 'identify', anonymousId: 'lim', userId: 'lim-user', timestamp: minutesAgo(5) })]);
      profileId = (await h.profileOf(org.orgId, 'user_id', 'lim-user')).id;
      const minute = Math.floor(Date.now() / 60_000);
      try {
        await scenario(org, h.nextIp());
        return;
      } catch (err) {
        if (attempt === 0 && Math.floor(Date.now() / 60_000) !== minute) continue;
        throw err;
      }
    }
  }

  const reads = (key: string, ip: string) => [
    () => h.get('', key, { ip }),
    () => h.get(`/${profileId}`, key, { ip }),
    () => h.get(`/${profileId}/events`, key, { ip }),
    () => h.get(`/${profileId}/identities`, key, { ip }),
    () => h.get('/search?q=lim-user', key, { ip }),
    () => h.get('/00000000-0000-4000-8000-000000000000', key, { ip }),
  ];
  const mergeOnce = (key: string, ip: string) => h.post('/merge', key, { source_profile_id: profileId, target_profile_id: '00000000-0000-4000-8000-000000000000' }, { ip });

  function expect429(res: Reply, limit: number): void {
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ success: false, error: Messages.rateLimitedPerIp(limit), code: 'rate_limited' });
    expect(res.headers.get('x-ratelimit-limit')).toBe(String(limit));
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
  }

  it('GET routes share 60 requests per minute per (org, IP); the 61st is 429 rate_limited', async () => {
    expect(Messages.rateLimitedPerIp(Limits.rate.profilesReadPerOrgIp)).toBe('Rate limit exceeded: max 60 requests per minute per IP');
    await inOneWindow(async (org, ip) => {
      const calls = reads(org.read, ip);
      const statuses: number[] = [];
      for (let i = 0; i < 60; i++) statuses.push((await calls[i % calls.length]!()).status);
      expect(statuses.filter((s) => s === 429)).toEqual([]);
      expect429(await calls[1]!(), 60);
      // Admin keys of the organisation share the bucket; another IP has its own; another org is untouched.
      expect429(await h.get('', org.admin, { ip }), 60);
      expect((await h.get('', org.read, { ip: h.nextIp() })).status).toBe(200);
    });
  });

  it('merge has its own bucket of 10 per minute, untouched by reads and not touching them', async () => {
    expect(Messages.rateLimitedPerIp(Limits.rate.profilesMergePerOrgIp)).toBe('Rate limit exceeded: max 10 requests per minute per IP');
    await inOneWindow(async (org, ip) => {
      // Ten merges (refused with 404: the limit is counted before the body is looked at).
      for (let i = 0; i < 10; i++) expect((await mergeOnce(org.admin, ip)).status).toBe(404);
      expect429(await mergeOnce(org.admin, ip), 10);
      // Reads from the same (org, IP) still have their whole bucket.
      const calls = reads(org.read, ip);
      for (let i = 0; i < 60; i++) expect((await calls[i % calls.length]!()).status).not.toBe(429);
      expect429(await calls[0]!(), 60);
    });
  });

  it('reads spent do not stop a merge', async () => {
    await inOneWindow(async (org, ip) => {
      const calls = reads(org.read, ip);
      for (let i = 0; i < 61; i++) await calls[i % calls.length]!();
      expect429(await calls[0]!(), 60);
      expect((await mergeOnce(org.admin, ip)).status).toBe(404);
    });
  });

  it('a per-key rate cap tightens both buckets', async () => {
    await inOneWindow(async (org, ip) => {
      for (let i = 0; i < 5; i++) expect((await h.get('', org.read, { ip })).status).toBe(200);
      expect429(await h.get('', org.read, { ip }), 5);
      for (let i = 0; i < 5; i++) expect((await mergeOnce(org.admin, ip)).status).toBe(404);
      expect429(await mergeOnce(org.admin, ip), 5);
    }, 5);
  });

  it('a cap above the default does not loosen it', async () => {
    await inOneWindow(async (org, ip) => {
      for (let i = 0; i < 10; i++) await mergeOnce(org.admin, ip);
      expect429(await mergeOnce(org.admin, ip), 10);
    }, 1_000);
  });

  it('a request refused for its key is not counted', async () => {
    await inOneWindow(async (org, ip) => {
      for (let i = 0; i < 12; i++) expect((await h.post('/merge', org.read, {}, { ip })).status).toBe(403);
      expect((await mergeOnce(org.admin, ip)).status).toBe(404);
    });
  });

  it('413 with limit_bytes 262144 for a declared body over 256 KiB, before authentication', async () => {
    const body = JSON.stringify({ source_profile_id: 'a', target_profile_id: 'b', reason: 'x'.repeat(Limits.smallBodyBytes) });
    for (const key of [undefined, 'uk_admin_not-a-real-key']) {
      const res = await h.post('/merge', key, body);
      expect(res).toMatchObject({
        status: 413,
        body: { success: false, error: Messages.bodyTooLarge(262_144), limit_bytes: 262_144, hint: BodyLimitHints.generic },
      });
    }
  });

  it('413 for a chunked body that grows past 256 KiB', async () => {
    const org = await h.org('chunked');
    const url = new URL(`${h.base}/merge`);
    const res = await new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const req = http.request(
        { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${org.admin}`, 'x-forwarded-for': h.nextIp() } },
        (r) => {
          let text = '';
          r.on('data', (c: Buffer) => (text += c.toString()));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
        },
      );
      req.on('error', (err) => (req.writableEnded ? undefined : reject(err)));
      req.write('{"source_profile_id":"a","target_profile_id":"b","reason":"');
      for (let i = 0; i < 40; i++) req.write('x'.repeat(8_192));
      req.end('"}');
    });
    expect(res).toEqual({ status: 413, body: { success: false, error: Messages.bodyTooLarge(262_144), limit_bytes: 262_144, hint: BodyLimitHints.generic } });
  });
});
