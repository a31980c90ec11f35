/**
 * Refusals that cost little: a client address sending keys that do not
 * verify is refused with the per-IP 429 once past UNAUTHENTICATED_PER_MINUTE,
 * before its key is looked up in the database and, on the Segment routes,
 * before its body is read; a key the gateway already verified keeps working
 * from that address; an IPv6 client counts by its /64.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { busMigrations, createPostgresLogBus, prefixedTopics, type Bus } from '@svc/bus';
import { ErrorCodes, Limits } from '@svc/contracts';
import { createLogger, createMetrics, serveHttp, type Metrics, type RunningHttpServer } from '@svc/runtime';
import { AccountsStore, accountsMigrations, failedAuthThrottle, rateLimitMigrations } from '@svc/accounts';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { IdentifierHashes, MasterKeyRing, privacyMigrations } from '@svc/identity';
import { mountGateway } from './routes';

const PER_MINUTE = 5;
const UNKNOWN = `uk_live_${'0'.repeat(40)}`;

describeWithPostgres('unauthenticated requests are refused cheaply', () => {
  let t: TestDatabase;
  let bus: Bus;
  let server: RunningHttpServer;
  let metrics: Metrics;
  let writeKey: string;
  let queries = 0;

  beforeAll(async () => {
    t = await createTestDatabase([accountsMigrations, rateLimitMigrations, busMigrations, privacyMigrations]);
    bus = createPostgresLogBus({ db: t.db, url: t.url });
    const topics = prefixedTopics(`unauth${Date.now()}.`);
    await bus.ensureTopics([topics.eventsRaw]);
    const accounts = new AccountsStore(t.db);
    const org = await accounts.createOrganization({ name: 'Throttled' });
    writeKey = (await accounts.createApiKey({ orgId: org.id, type: 'write' })).key;
    t.db.on('query', () => (queries += 1));
    const logger = createLogger({ name: 'unauth-test', level: 'silent' });
    metrics = createMetrics({ collectDefaultMetrics: false });
    // The test client sends X-Forwarded-For through a trusted 127.0.0.1: each request picks its client address.
    server = await serveHttp({
      config: { HOST: '127.0.0.1', PORT: 0, TRUSTED_PROXIES: ['127.0.0.1'], TLS_CERT_FILE: undefined, TLS_KEY_FILE: undefined, REQUIRE_HTTPS: false },
      logger,
      metrics,
      readiness: async () => ({ checks: {} }),
      mount: (router) =>
        mountGateway(router, {
          db: t.db,
          bus,
          rawTopic: topics.eventsRaw,
          logger,
          metrics,
          trustedProxies: ['127.0.0.1'],
          failedAuth: failedAuthThrottle(PER_MINUTE, metrics),
          upgradeUrl: 'https://billing.test',
          keyOutageGraceMs: 0,
          masterKeys: new MasterKeyRing(randomBytes(32)),
          hashes: new IdentifierHashes([randomBytes(32)]),
        }),
    });
  });
  afterAll(async () => {
    await server?.close();
    await bus?.close();
    await t?.drop();
  });

  const batch = (id: string) => JSON.stringify({ batch: [{ type: 'track', event: 'Tested', messageId: id, anonymousId: 'a-1', timestamp: new Date().toISOString() }] });
  const post = async (client: string, key: string, id: string) => {
    const res = await fetch(`${server.url}/functions/v1/v1-batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-forwarded-for': client },
      body: batch(id),
    });
    return { status: res.status, body: (await res.json()) as { code?: string; error?: string }, retryAfter: res.headers.get('retry-after') };
  };

  it(`past ${PER_MINUTE} keys that did not verify, an address gets 429 rate_limited with no database read; a verified key still works from it`, async () => {
    expect((await post('203.0.113.1', writeKey, 'ok-1')).status).toBe(200);
    for (let i = 0; i < PER_MINUTE; i += 1) expect((await post('203.0.113.1', UNKNOWN, `x-${i}`)).status).toBe(401);
    const before = queries;
    for (let i = 0; i < 20; i += 1) {
      const refused = await post('203.0.113.1', UNKNOWN, `y-${i}`);
      expect({ status: refused.status, code: refused.body.code, retryAfter: refused.retryAfter !== null }).toEqual({ status: 429, code: ErrorCodes.rateLimited, retryAfter: true });
    }
    expect(queries).toBe(before);
    expect((await post('203.0.113.1', writeKey, 'ok-2')).status).toBe(200);
    expect((await post('203.0.113.2', UNKNOWN, 'other-address')).status).toBe(401);
    const counted = await metrics.registry.getSingleMetricAsString('http_unauthenticated_throttled_total');
    expect(counted).toMatch(/http_unauthenticated_throttled_total 20$/m);
  });

  it('an IPv6 client rotating its address within one /64 is one client; the next /64 is another', async () => {
    for (let i = 1; i <= PER_MINUTE; i += 1) expect((await post(`2001:db8:7:1::${i.toString(16)}`, UNKNOWN, `v6-${i}`)).status).toBe(401);
    expect((await post('2001:db8:7:1:ffff::1', UNKNOWN, 'v6-rotated')).status).toBe(429);
    expect((await post('2001:db8:7:2::1', UNKNOWN, 'v6-next')).status).toBe(401);
  });

  it('the Segment routes refuse a throttled address whose key could only be in the body before reading a byte of the body', async () => {
    for (let i = 0; i < PER_MINUTE; i += 1) expect((await post('198.51.100.7', UNKNOWN, `s-${i}`)).status).toBe(401);
    // Announce a full-size body, send one chunk of it, and wait: the answer must not wait for the rest.
    const { hostname, port } = new URL(server.url);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: hostname, port, method: 'POST', path: '/functions/v1/segment/v1/batch', headers: { 'content-type': 'application/json', 'content-length': Limits.batchBodyBytes, 'x-forwarded-for': '198.51.100.7' } }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.write(`{"batch":[${' '.repeat(64 * 1024)}`);
      setTimeout(() => reject(new Error('no answer within 5 s: the body was waited for')), 5_000).unref();
    });
    expect(answer.status).toBe(429);
    expect(JSON.parse(answer.body)).toMatchObject({ success: false, code: ErrorCodes.rateLimited });
  });
});
