import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { busMigrations, createKafkaBus, createPostgresLogBus, prefixedTopics, type Bus, type IncomingMessage } from '@svc/bus';
import { randomBytes } from 'node:crypto';
import { Messages, type RawLogMessage } from '@svc/contracts';
import { DataKeyReader, IdentifierHashes, MasterKeyRing, openRawLog, privacyMigrations } from '@svc/identity';
import {
  createLogger,
  createMetrics,
  serveHttp,
  type RunningHttpServer,
} from '@svc/runtime';
import { AccountsStore, FailedAuthThrottle, accountsMigrations, rateLimitMigrations } from '@svc/accounts';
import { createTestDatabase, describeWithKafka, describeWithPostgres, kafkaEndpoints, readRawKafkaTopic, type TestDatabase } from '@svc/testkit';
import { mountGateway } from './routes';
import { documentedFetch } from '@svc/openapi';

/**
 * The gateway on real parts: PostgreSQL for keys, limits and usage, and the
 * real log. Two gateway instances share one database, as replicas would.
 */
describeWithPostgres('ingest gateway on PostgreSQL and the Postgres-backed log', () =>
  gatewaySuite(
    (t) => createPostgresLogBus({ db: t.db, url: t.url }),
    // The log's table as a database copy holds it.
    async (t, topic) => ((await t.db('bus.messages').where({ topic }).select('key', t.db.raw('value::text as value'))) as Array<{ key: string; value: string }>).map((r) => `${r.key} ${r.value}`),
  ),
);

describeWithKafka('ingest gateway on PostgreSQL and Kafka with the schema registry', () =>
  gatewaySuite(
    () => createKafkaBus(kafkaEndpoints()),
    // The topic's records as the brokers store them.
    async (_t, topic, count) => (await readRawKafkaTopic(topic, count)).map((m) => `${m.key} ${m.value.toString('latin1')}`),
  ),
);

/** Every message of a topic as stored: key and value, as text. */
type RawRead = (t: TestDatabase, topic: string, count: number) => Promise<string[]>;

function gatewaySuite(makeBus: (t: TestDatabase) => Bus, storedMessages: RawRead): void {
  let t: TestDatabase;
  let bus: Bus;
  const servers: RunningHttpServer[] = [];
  const topics = prefixedTopics(`gw${Date.now()}${Math.random().toString(36).slice(2, 6)}.`);
  let accounts: AccountsStore;
  const masterKeys = new MasterKeyRing(randomBytes(32));

  beforeAll(async () => {
    t = await createTestDatabase([accountsMigrations, rateLimitMigrations, busMigrations, privacyMigrations]);
    bus = makeBus(t);
    await bus.ensureTopics([topics.eventsRaw]);
    accounts = new AccountsStore(t.db);
    const logger = createLogger({ name: 'gw-test', level: 'silent' });
    for (let i = 0; i < 2; i++) {
      const metrics = createMetrics({ collectDefaultMetrics: false });
      servers.push(
        await serveHttp({
          config: { HOST: '127.0.0.1', PORT: 0, TRUSTED_PROXIES: [], TLS_CERT_FILE: undefined, TLS_KEY_FILE: undefined, REQUIRE_HTTPS: false },
          logger,
          metrics,
          readiness: async () => ({ checks: {} }),
          mount: (router) =>
            mountGateway(router, { db: t.db, bus, rawTopic: topics.eventsRaw, logger, metrics, trustedProxies: [], failedAuth: new FailedAuthThrottle(1_000_000), upgradeUrl: 'https://billing.test', keyOutageGraceMs: 300_000, masterKeys, hashes: new IdentifierHashes([randomBytes(32)]) }),
        }),
      );
    }
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
    await bus.close();
    await t.drop();
  });

  const post = (server: RunningHttpServer, key: string, batch: unknown[], headers: Record<string, string> = {}) =>
    documentedFetch(`${server.url}/functions/v1/v1-batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      body: JSON.stringify({ batch }),
    });

  const postRaw = (server: RunningHttpServer, key: string, body: string) =>
    fetch(`${server.url}/functions/v1/v1-batch`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body });
  const postSegment = (server: RunningHttpServer, key: string) =>
    fetch(`${server.url}/functions/v1/segment/v1/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}` },
      body: JSON.stringify({ batch: [] }),
    });

  it('acknowledges a batch only once it is on the raw topic, sealed: the stored bytes name no one, and the events open with their keys', async () => {
    const org = await accounts.createOrganization({ name: 'Envelope' });
    const { key } = await accounts.createApiKey({ orgId: org.id, type: 'write' });
    const received: Array<IncomingMessage<RawLogMessage>> = [];
    const sub = await bus.subscribe<RawLogMessage>({
      groupId: 'gw-test',
      topics: [topics.eventsRaw],
      handler: async (batch) => void received.push(...batch.messages),
    });
    const batch = [
      { type: 'identify', messageId: 'e-1', anonymousId: 'anon-ann-1', userId: 'user-ann-1', timestamp: '2026-11-21T10:00:00Z', traits: { email: 'ann.sealed@example.com', phone: '+447700900123' } },
      { type: 'track', messageId: 'e-2', anonymousId: 'anon-ann-1', event: 'Signed Up', timestamp: '2026-11-21T10:00:01Z', context: { fingerprint: { hash: 'h' }, userAgent: 'Ann-Agent/1.0', page: { url: 'https://shop.test/ann' } } },
      { type: 'page', messageId: 'e-3', anonymousId: 'anon-bob-1', timestamp: '2026-11-21T10:00:02Z' },
    ];
    const res = await post(servers[0]!, key, batch, { 'x-request-id': 'req-abc' });
    expect(await res.json()).toMatchObject({ success: true, processed: 3, failed: 0 });
    const deadline = Date.now() + 10_000;
    while (received.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    await sub.stop();

    // What the log keeps: no identifier, address, agent, page or property in clear, in keys or values.
    const stored = (await storedMessages(t, topics.eventsRaw.name, 3)).join('\n');
    for (const clear of ['anon-ann-1', 'user-ann-1', 'ann.sealed@example.com', '+447700900123', '447700900123', '127.0.0.1', 'Ann-Agent', 'shop.test', 'Signed Up', 'anon-bob-1']) {
      expect(stored).not.toContain(clear);
    }
    // One key per anonymous id: the partition key names it, so a visitor's events keep their partition and order.
    // (Kafka hands partitions over in any order: the events are matched by their messageId once opened.)
    const opened = await openRawLog(new DataKeyReader(t.db, masterKeys), received.map((m) => m.value));
    expect(opened.erased).toBe(0);
    const byId = new Map(opened.events.map((e, i) => [e.event.messageId, { event: e, message: received[i]! }]));
    const [e1, e2, e3] = ['e-1', 'e-2', 'e-3'].map((id) => byId.get(id)!);
    for (const { message } of [e1!, e2!, e3!]) {
      expect(message.value).toMatchObject({ v: 2, orgId: org.id, requestId: 'req-abc' });
      expect(message.key).toBe(`${org.id}:${(message.value as { keyId: string }).keyId}`);
    }
    expect(e2!.message.key).toBe(e1!.message.key);
    expect(e3!.message.key).not.toBe(e1!.message.key);
    expect(e1!.event).toMatchObject({ v: 1, orgId: org.id, requestId: 'req-abc', clientIp: '127.0.0.1', event: batch[0] });
    expect(e2!.event.event.context).toMatchObject({ ip_address: '127.0.0.1', userAgent: 'Ann-Agent/1.0', page: { url: 'https://shop.test/ann' } });

    // The erasure's half: without the key row, the same bytes open to nothing.
    await t.db('privacy.subject_keys').where({ org_id: org.id }).delete();
    expect(await openRawLog(new DataKeyReader(t.db, masterKeys), received.map((m) => m.value))).toEqual({ events: [], erased: 3 });
  });

  it('holds the per-(org, IP) limit across two gateway instances', async () => {
    const org = await accounts.createOrganization({ name: 'Limits' });
    const { key } = await accounts.createApiKey({ orgId: org.id, type: 'write', ratePerMinuteCap: 10 });
    const statuses = await Promise.all(Array.from({ length: 16 }, (_, i) => post(servers[i % 2]!, key, []).then((r) => r.status)));
    // A window boundary may fall inside the burst; then each window allows its own 10.
    const allowed = statuses.filter((s) => s === 200).length;
    expect([10, 16]).toContain(allowed);
    if (allowed === 10) expect(statuses.filter((s) => s === 429)).toHaveLength(6);
  });

  it('refuses a revoked key on the very next request, on every instance', async () => {
    const org = await accounts.createOrganization({ name: 'Revoked' });
    const { record, key } = await accounts.createApiKey({ orgId: org.id, type: 'write' });
    expect((await post(servers[0]!, key, [])).status).toBe(200);
    expect((await post(servers[1]!, key, [])).status).toBe(200);
    await accounts.revokeApiKey(record.id);
    for (const server of servers) {
      const res = await post(server, key, []);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ success: false, error: 'Invalid or expired API key' });
    }
  });

  // Each instance holds the key it verified (KeyCache) and confirms it on every use: whatever changes
  // is seen on the very next request, on every instance, even where the request has other faults.
  const changes: Array<[string, (orgId: string, keyId: string) => Promise<unknown>, (server: RunningHttpServer, key: string) => Promise<Response>, number, Record<string, unknown>]> = [
    ['a revoked key, with a body that is no batch', (_org, id) => accounts.revokeApiKey(id), (server, key) => postRaw(server, key, '{"nobatch":1}'), 401, { success: false, error: Messages.invalidApiKey }],
    ['a revoked key, with JSON that does not parse', (_org, id) => accounts.revokeApiKey(id), (server, key) => postRaw(server, key, '{'), 401, { success: false, error: Messages.invalidApiKey }],
    ['a rotated key', (_org, id) => accounts.rotateApiKey(id), (server, key) => post(server, key, []), 401, { success: false, error: Messages.invalidApiKey }],
    ['a revoked key on the Segment route', (_org, id) => accounts.revokeApiKey(id), (server, key) => postSegment(server, key), 401, { success: false, error: Messages.invalidApiKey }],
    ['a paused organisation', (org) => accounts.setPlanState(org, 'paused'), (server, key) => post(server, key, []), 429, { success: false, error: Messages.quotaPaused }],
    [
      'an origin allowlist added',
      (_org, id) => t.db('accounts.api_keys').where({ id }).update({ origin_allowlist: ['https://shop.test'] }),
      (server, key) => post(server, key, [], { origin: 'https://elsewhere.test' }),
      403,
      { success: false, error: Messages.originNotAllowed },
    ],
  ];
  it.each(changes)('refuses %s on the very next request, on every instance', async (_what, change, request, status, body) => {
    const org = await accounts.createOrganization({ name: 'Changing' });
    const { record, key } = await accounts.createApiKey({ orgId: org.id, type: 'write' });
    for (const server of [...servers, ...servers]) expect((await post(server, key, [])).status).toBe(200);
    await change(org.id, record.id);
    for (const server of servers) {
      const res = await request(server, key);
      expect([res.status, await res.json()]).toEqual([status, expect.objectContaining(body)]);
    }
  });

  it('a key changed in a way that still allows the request is counted afresh and let through', async () => {
    const org = await accounts.createOrganization({ name: 'Still allowed' });
    const { record, key } = await accounts.createApiKey({ orgId: org.id, type: 'write', ratePerMinuteCap: 100 });
    for (const server of [...servers, ...servers]) expect((await post(server, key, [])).status).toBe(200);
    // The cap now allows no more than the four already counted in this window (unless the window just turned).
    await t.db('accounts.api_keys').where({ id: record.id }).update({ rate_cap_per_minute: 4 });
    const statuses = [];
    for (const server of servers) statuses.push((await post(server, key, [])).status);
    expect([[429, 429], [200, 200]]).toContainEqual(statuses);
  });

  it('applies the monthly quota from recorded usage', async () => {
    const org = await accounts.createOrganization({ name: 'Quota', monthlyEventQuota: 3 });
    const { key } = await accounts.createApiKey({ orgId: org.id, type: 'write' });
    expect((await post(servers[0]!, key, [])).status).toBe(200);
    await AccountsStore.addUsage(t.db, org.id, new Date(), 3);
    const res = await post(servers[1]!, key, []);
    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({ success: false, error: 'Monthly event limit exceeded. Please upgrade your plan.' });
  });
}
