import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { busMigrations, createPostgresLogBus, prefixedTopics, type Bus, type IncomingMessage } from '@svc/bus';
import { Messages, type ConsentDecisionEvent } from '@svc/contracts';
import {
  createLogger,
  createMetrics,
  serveHttp,
  type RunningHttpServer,
} from '@svc/runtime';
import { AccountsStore, FailedAuthThrottle, accountsMigrations, rateLimitMigrations } from '@svc/accounts';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { IdentifierHashes, identityMigrations, privacyMigrations } from '@svc/identity';
import { processBatch } from '@svc/identity-resolver';
import { consentMigrations } from './migrations';
import type { RepeatingDrain } from '@svc/runtime';
import { mountConsentApi } from './routes-setup';
import { documentedFetch } from '@svc/openapi';

describeWithPostgres('consent API on PostgreSQL', () => {
  let t: TestDatabase;
  let bus: Bus;
  let server: RunningHttpServer;
  let publisher: RepeatingDrain;
  let url: string;
  const topics = prefixedTopics(`consent${Date.now()}.`);
  const keys: Record<'write' | 'read' | 'admin' | 'otherRead', string> = { write: '', read: '', admin: '', otherRead: '' };
  let orgId = '';

  beforeAll(async () => {
    t = await createTestDatabase([accountsMigrations, rateLimitMigrations, busMigrations, identityMigrations, privacyMigrations, consentMigrations]);
    bus = createPostgresLogBus({ db: t.db, url: t.url });
    await bus.ensureTopics([topics.consentDecisions]);
    const logger = createLogger({ name: 'consent-test', level: 'silent' });
    server = await serveHttp({
      config: { HOST: '127.0.0.1', PORT: 0, TRUSTED_PROXIES: [], TLS_CERT_FILE: undefined, TLS_KEY_FILE: undefined, REQUIRE_HTTPS: false },
      logger,
      metrics: createMetrics({ collectDefaultMetrics: false }),
      readiness: async () => ({ checks: {} }),
      mount: (router) => {
        publisher = mountConsentApi(router, { db: t.db, bus, decisionsTopic: topics.consentDecisions, logger, trustedProxies: [], failedAuth: new FailedAuthThrottle(1_000_000) });
      },
    });
    url = `${server.url}/functions/v1/v1-consent`;
    const accounts = new AccountsStore(t.db);
    const org = await accounts.createOrganization({ name: 'Consent' });
    orgId = org.id;
    for (const type of ['write', 'read', 'admin'] as const) keys[type] = (await accounts.createApiKey({ orgId: org.id, type })).key;
    const other = await accounts.createOrganization({ name: 'Other' });
    keys.otherRead = (await accounts.createApiKey({ orgId: other.id, type: 'read' })).key;
  });
  afterAll(async () => {
    await server.close();
    await publisher.stop();
    await bus.close();
    await t.drop();
  });

  const send = async (method: string, key: string, body?: unknown, query = '', headers: Record<string, string> = {}) => {
    const res = await documentedFetch(`${url}${query}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  };
  const count = async () => Number((await t.db.raw('select count(*) as n from consent.records')).rows[0].n);

  it('records decisions and reads back the current state and the history, newest first', async () => {
    const posted = await send('POST', keys.write, { anonymousId: 'anon_a', purposes: { analytics: true, fingerprinting: false }, source: 'banner', timestamp: '2026-11-21T10:00:00Z' }, '', { 'user-agent': 'test-agent/1' });
    expect(posted).toMatchObject({ status: 200, body: { success: true, id: expect.any(String), received_at: expect.any(String) } });
    await send('POST', keys.admin, { anonymousId: 'anon_a', purposes: { analytics: false } });
    const read = await send('GET', keys.read, undefined, '?anonymous_id=anon_a');
    expect(read.status).toBe(200);
    expect(read.body.current).toEqual({
      analytics: { granted: false, source: 'api', decided_at: expect.any(String), record_id: expect.any(String) },
      fingerprinting: { granted: false, source: 'banner', decided_at: expect.any(String), record_id: posted.body.id },
    });
    const history = read.body.history as Array<Record<string, unknown>>;
    expect(history.map((h) => h.purposes)).toEqual([{ analytics: false }, { analytics: true, fingerprinting: false }]);
    expect(history[1]).toMatchObject({ source: 'banner', client_timestamp: '2026-11-21T10:00:00.000Z' });
    const stored = (await t.db.raw('select key_id, client_ip, user_agent from consent.records where id = ?', [String(posted.body.id)])).rows[0];
    expect(stored).toMatchObject({ client_ip: '127.0.0.1', user_agent: 'test-agent/1' });
  });

  it('pages the history with an opaque cursor', async () => {
    for (let i = 0; i < 5; i++) await send('POST', keys.write, { anonymousId: 'anon_pages', purposes: { analytics: i % 2 === 0 } });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await send('GET', keys.read, undefined, `?anonymous_id=anon_pages&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...(page.body.history as Array<{ id: string }>).map((h) => h.id));
      cursor = page.body.next_cursor as string | null;
    } while (cursor);
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
  });

  it('finds decisions made while anonymous by the user id once the visitor is identified', async () => {
    await send('POST', keys.write, { anonymousId: 'anon_later_known', purposes: { fingerprinting: true } });
    await send('POST', keys.write, { anonymousId: 'anon_later_known', userId: 'user-42', purposes: { analytics: true } });
    const byUser = await send('GET', keys.read, undefined, '?user_id=user-42');
    expect(Object.keys(byUser.body.current as object).sort()).toEqual(['analytics', 'fingerprinting']);
    expect(byUser.body.history).toHaveLength(2);
  });

  it('finds them too once the identity resolver has stitched the visitor to the user', async () => {
    await send('POST', keys.write, { anonymousId: 'anon_stitched', purposes: { analytics: false } });
    const identify = {
      v: 1 as const,
      orgId,
      receivedAt: new Date().toISOString(),
      requestId: 'r',
      clientIp: '127.0.0.1',
      event: { type: 'identify' as const, messageId: 'id-1', anonymousId: 'anon_stitched', userId: 'user-77', timestamp: new Date().toISOString() },
    };
    await t.db.transaction((trx) => processBatch(trx, [identify], { hashes: new IdentifierHashes([randomBytes(32)]) }));
    const byUser = await send('GET', keys.read, undefined, '?user_id=user-77');
    expect(byUser.body.current).toMatchObject({ analytics: { granted: false } });
  });

  it('keeps organisations apart', async () => {
    const other = await send('GET', keys.otherRead, undefined, '?anonymous_id=anon_a');
    expect(other.body).toMatchObject({ success: true, current: {}, history: [] });
  });

  it('publishes every decision to consent.decisions', async () => {
    const received: Array<IncomingMessage<ConsentDecisionEvent>> = [];
    const sub = await bus.subscribe<ConsentDecisionEvent>({ groupId: 'consent-test', topics: [topics.consentDecisions], handler: async (b) => void received.push(...b.messages) });
    const posted = await send('POST', keys.write, { anonymousId: 'anon_pub', purposes: { identity: true }, source: 'preferences' });
    const deadline = Date.now() + 10_000;
    while (!received.some((m) => m.value.recordId === posted.body.id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    await sub.stop();
    expect(received.find((m) => m.value.recordId === posted.body.id)?.value).toMatchObject({ v: 1, orgId, anonymousId: 'anon_pub', purposes: { identity: true }, source: 'preferences' });
  });

  it('is append-only, in the database too', async () => {
    await expect(t.db.raw(`update consent.records set purposes = '{"analytics": true}'`)).rejects.toThrow(/append-only/);
    await expect(t.db.raw('delete from consent.records')).rejects.toThrow(/append-only/);
  });

  const invalid: Array<[string, string, unknown, string, number, string]> = [
    ['unknown purpose', 'POST', { anonymousId: 'a1', purposes: { ads: true } }, '', 400, 'Invalid consent: unknown purpose "ads" (known: analytics, fingerprinting, identity)'],
    ['missing subject', 'POST', { purposes: { analytics: true } }, '', 400, 'Invalid consent: anonymousId is required'],
    ['wrong type', 'POST', { anonymousId: 'a1', purposes: { analytics: 1 } }, '', 400, 'Invalid consent: purposes.analytics must be true or false'],
    ['invalid JSON', 'POST', '{"anonymousId":', '', 400, Messages.invalidJson],
    ['empty body', 'POST', '', '', 400, Messages.emptyBody],
    ['oversize body', 'POST', JSON.stringify({ anonymousId: 'a1', purposes: { analytics: true }, pad: 'x'.repeat(262_144) }), '', 413, Messages.bodyTooLarge(262_144)],
    ['GET without subject', 'GET', undefined, '', 400, 'anonymous_id or user_id is required'],
    ['GET with bad limit', 'GET', undefined, '?anonymous_id=a&limit=0', 400, 'limit must be an integer from 1 to 200'],
    ['GET with bad cursor', 'GET', undefined, '?anonymous_id=a&cursor=zzz', 400, 'Invalid cursor'],
    ['PUT', 'PUT', { anonymousId: 'a1' }, '', 405, Messages.methodNotAllowed],
    ['DELETE', 'DELETE', undefined, '', 405, Messages.methodNotAllowed],
  ];
  it.each(invalid)('%s → %s', async (_name, method, body, query, status, error) => {
    const before = await count();
    const res = await send(method, method === 'GET' ? keys.read : keys.write, body, query);
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ success: false, error });
    if (status === 413) expect(res.body).toMatchObject({ limit_bytes: 262_144 });
    expect(await count()).toBe(before);
  });

  it.each([
    ['read key cannot record', 'POST', 'read', 'Insufficient permissions: this operation requires a write or admin key'],
    ['write key cannot read', 'GET', 'write', 'Insufficient permissions: this operation requires a read or admin key'],
  ] as const)('%s', async (_name, method, key, error) => {
    const res = await send(method, keys[key], method === 'POST' ? { anonymousId: 'a', purposes: { analytics: true } } : undefined, '?anonymous_id=a');
    expect(res).toMatchObject({ status: 403, body: { success: false, error } });
  });

  it('limits each (org, IP) to 60 requests per minute across both methods', async () => {
    const accounts = new AccountsStore(t.db);
    // Two tries, each with a fresh organisation (so a fresh bucket): a minute
    // boundary inside the first burst would reset its window.
    for (let attempt = 0; attempt < 2; attempt++) {
      const org = await accounts.createOrganization({ name: `Busy ${attempt}` });
      const write = (await accounts.createApiKey({ orgId: org.id, type: 'write' })).key;
      const read = (await accounts.createApiKey({ orgId: org.id, type: 'read' })).key;
      const statuses: number[] = [];
      for (let i = 0; i < 61; i++) {
        statuses.push((i % 2 ? await send('GET', read, undefined, '?anonymous_id=x') : await send('POST', write, { anonymousId: 'x', purposes: { analytics: true } })).status);
      }
      if (statuses.indexOf(429) === -1 && attempt === 0) continue;
      expect(statuses.indexOf(429)).toBe(60);
      const res = await send('GET', read, undefined, '?anonymous_id=x');
      expect(res.body).toEqual({ success: false, error: 'Rate limit exceeded: max 60 requests per minute per IP', code: 'rate_limited' });
      expect(res.headers.get('x-ratelimit-limit')).toBe('60');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      return;
    }
  });
});
