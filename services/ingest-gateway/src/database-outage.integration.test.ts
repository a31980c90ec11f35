/**
 * On Kafka, the gateway's only hard dependency for accepting an event is
 * the log: while PostgreSQL does not answer (stopped for real here, as a
 * failover looks from a client), a key the database confirmed recently is
 * still honoured (KEY_OUTAGE_GRACE_SECONDS), its limits are counted in the
 * process, readiness says the database is degraded rather than failing, and
 * every event acknowledged meanwhile is in the log. An unknown key still
 * gets the spec's 500; a gateway with no grace refuses as before; a key
 * revoked during the outage is refused on the first request after the
 * database answers.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { busConfigSpec, busMigrations, createBus, prefixedTopics, type Bus } from '@svc/bus';
import { Messages } from '@svc/contracts';
import { privacyMigrations } from '@svc/identity';
import { createDb, loadConfig, runMigrations, type Db } from '@svc/runtime';
import { AccountsStore, accountsMigrations, rateLimitMigrations } from '@svc/accounts';
import { startService, type RunningService } from '@svc/service';
import { describeWithKafkaAnd, kafkaEnv, startLocalPostgres, type LocalPostgres } from '@svc/testkit';
import { gatewayService } from './service';

describeWithKafkaAnd('gateway through a database outage (Kafka)', ['postgresql'], () => {
  let pg: LocalPostgres;
  let db: Db;
  let bus: Bus;
  let accounts: AccountsStore;
  let graced: RunningService;
  let strict: RunningService;
  let key: { id: string; key: string };
  const prefix = `outage${randomBytes(3).toString('hex')}.`;
  const masterKey = randomBytes(32).toString('hex');
  const hashKey = randomBytes(32).toString('hex');

  const env = (grace: string) => ({
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    DATABASE_URL: pg.adminUrl,
    ...kafkaEnv(),
    TOPIC_PREFIX: prefix,
    KEY_OUTAGE_GRACE_SECONDS: grace,
    RAW_LOG_MASTER_KEY: masterKey,
    IDENTIFIER_HASH_KEYS: hashKey,
    STARTUP_CONNECT_TIMEOUT_SECONDS: '10',
  });

  beforeAll(async () => {
    pg = await startLocalPostgres();
    db = createDb({ url: pg.adminUrl, poolMax: 2 });
    await runMigrations(db, [accountsMigrations, rateLimitMigrations, busMigrations, privacyMigrations]);
    accounts = new AccountsStore(db);
    const org = await accounts.createOrganization({ name: 'Outage' });
    const created = await accounts.createApiKey({ orgId: org.id, type: 'write' });
    key = { id: created.record.id, key: created.key };
    bus = await createBus(loadConfig(busConfigSpec, { ...kafkaEnv(), TOPIC_PREFIX: prefix }), { db });
    graced = await startService(gatewayService, env('60'));
    strict = await startService(gatewayService, env('0'));
  }, 120_000);

  afterAll(async () => {
    await graced?.lifecycle.shutdown('test done');
    await strict?.lifecycle.shutdown('test done');
    await bus?.close();
    await db?.destroy();
    await pg?.remove();
  }, 60_000);

  const post = async (origin: string, bearer: string, n = 5, anonymousId = 'anon-outage') => {
    const batch = Array.from({ length: n }, () => ({ type: 'track', event: 'outage', messageId: randomUUID(), anonymousId, timestamp: new Date().toISOString() }));
    const res = await fetch(`${origin}/functions/v1/v1-batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ batch }),
      signal: AbortSignal.timeout(20_000),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const logged = async () => (await bus.endOffsets(prefixedTopics(prefix).eventsRaw)).reduce((sum, end) => sum + Number(end), 0);
  const metric = async (origin: string, name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(await (await fetch(`${origin}/metrics`)).text())?.[1] ?? 0);

  it('admits a recently confirmed key while PostgreSQL is down, and refuses a revoked one once it is back', async () => {
    // Both gateways hold the key, confirmed by the database.
    for (const g of [graced, strict]) {
      expect((await post(g.url, key.key)).status).toBe(200);
      expect((await post(g.url, key.key)).status).toBe(200);
    }
    const before = await logged();

    await pg.stopServer();
    const during: number[] = [];
    for (let i = 0; i < 10; i++) during.push((await post(graced.url, key.key)).status);
    expect(during).toEqual(Array(10).fill(200));
    expect(await logged()).toBe(before + 50);

    const ready = await fetch(`${graced.url}/readyz`);
    expect([ready.status, ((await ready.json()) as { checks: Record<string, string> }).checks.database]).toEqual([200, 'degraded']);
    expect(await metric(graced.url, 'gateway_outage_admissions_total')).toBe(10);
    expect(await metric(graced.url, 'gateway_rate_limit_fallbacks_total')).toBe(10);
    // A visitor first seen now has no key to seal with (made in the database): refused, nothing written that could never be opened.
    const newcomer = await post(graced.url, key.key, 5, 'anon-first-seen-in-outage');
    expect([newcomer.status, newcomer.body.error]).toEqual([503, Messages.serviceUnavailable]);
    expect(await logged()).toBe(before + 50);

    // An unknown key cannot be verified: the spec's 500. Without a grace, neither can a held one.
    const unknown = await post(graced.url, `uk_live_${'0'.repeat(40)}`);
    expect([unknown.status, unknown.body.error]).toEqual([500, Messages.authenticationFailed]);
    const refused = await post(strict.url, key.key);
    expect([refused.status, refused.body.error]).toEqual([500, Messages.authenticationFailed]);

    await pg.startServer();
    // The test's own pool held connections to the stopped server: a new one.
    await db.destroy();
    db = createDb({ url: pg.adminUrl, poolMax: 2 });
    await new AccountsStore(db).revokeApiKey(key.id);
    const after = await post(graced.url, key.key);
    expect([after.status, after.body.error]).toEqual([401, Messages.invalidApiKey]);
  }, 120_000);
});
