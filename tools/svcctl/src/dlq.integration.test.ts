import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { busConfigSpec, busMigrations, createBus, partitionFor, prefixedTopics, type Bus } from '@svc/bus';
import type { RawEventEnvelope } from '@svc/contracts';
import { IdentifierHashes, MasterKeyRing, identityMigrations, privacyMigrations } from '@svc/identity';
import { startResolver, type RunningResolver } from '@svc/identity-resolver';
import { loadConfig, type Db } from '@svc/runtime';
import { AccountsStore, accountsMigrations } from '@svc/accounts';
import { createTestDatabase, describeWithKafka, describeWithPostgres, kafkaEnv, pollForValue, testLogger, type TestDatabase } from '@svc/testkit';
import { ok, svcctl } from './test-support/run';

/**
 * `svcctl dlq list` and `dlq redrive`, end to end: a real resolver with a
 * bug that makes one organisation's events fail (the other organisation's
 * batch-mates pass, so the resolver proves them bad and dead-letters them),
 * the bug fixed, the events put back with the CLI and stored, once however
 * often they are redriven.
 */
function dlqSuite(tier: 'postgres-log' | 'kafka'): void {
  let t: TestDatabase;
  let bus: Bus;
  let resolver: RunningResolver;
  const prefix = `dlq${randomUUID().slice(0, 8)}.`;
  const topics = prefixedTopics(prefix);
  const env: Record<string, string> = { TOPIC_PREFIX: prefix, ...(tier === 'kafka' ? kafkaEnv() : {}) };
  /** The organisation the bug hits while `broken` is set. */
  let unlucky = '';
  let broken = true;

  beforeAll(async () => {
    t = await createTestDatabase([accountsMigrations, busMigrations, identityMigrations, privacyMigrations]);
    bus = await createBus(loadConfig(busConfigSpec, env), { db: t.db, logger: testLogger('svcctl-dlq') });
    await bus.ensureTopics(Object.values(topics));
    resolver = await startResolver({
      db: t.db,
      bus,
      topics,
      logger: testLogger('svcctl-dlq-resolver'),
      masterKeys: new MasterKeyRing(randomBytes(32)),
      hashes: new IdentifierHashes([randomBytes(32)]),
      relay: { intervalMs: 100 },
      batch: {
        conversionNames: async (orgId) => {
          if (broken && orgId === unlucky) throw new TypeError("Cannot read properties of undefined (reading 'names')");
          return null;
        },
      },
    });
  }, 120_000);
  afterAll(async () => {
    await resolver?.stop();
    await bus?.close();
    await t?.drop();
  }, 60_000);

  it('lists what the resolver dead-lettered, and redrives it once fixed: stored exactly once, however often redriven', async () => {
    const accounts = new AccountsStore(t.db);
    unlucky = (await accounts.createOrganization({ name: 'Unlucky' })).id;
    const lucky = (await accounts.createOrganization({ name: 'Lucky' })).id;
    // Both organisations' visitors in one partition, so a batch mixes them: the lucky events passing prove the unlucky ones bad.
    const partition = partitionFor(`${unlucky}:anon-1`, topics.eventsRaw.partitions);
    const luckyVisitor = Array.from({ length: 1000 }, (_, i) => `anon-${i}`).find((a) => partitionFor(`${lucky}:${a}`, topics.eventsRaw.partitions) === partition)!;
    const envelope = (orgId: string, anonymousId: string): { key: string; value: RawEventEnvelope } => ({
      key: `${orgId}:${anonymousId}`,
      value: { v: 1, orgId, receivedAt: new Date().toISOString(), requestId: 'req', clientIp: '203.0.113.9', event: { type: 'page', messageId: randomUUID(), anonymousId, timestamp: new Date().toISOString() } },
    });
    const parked = [envelope(unlucky, 'anon-1'), envelope(unlucky, 'anon-1')];
    await bus.produce(topics.eventsRaw, [envelope(lucky, luckyVisitor), parked[0]!, envelope(lucky, luckyVisitor), parked[1]!]);

    const listed = await until(async () => {
      const out = await ok(t.url, ['dlq', 'list', '--topic', 'events.raw'], env);
      return out.count === 2 ? out : undefined;
    });
    expect(listed.topic).toBe(`${prefix}events.raw.dlq`);
    const messages = listed.messages as Array<Record<string, unknown>>;
    expect(messages.map((m) => (m.value as RawEventEnvelope).event.messageId).sort()).toEqual(parked.map((p) => p.value.event.messageId).sort());
    // The payload is printed as stored (camelCase), the listing's own fields snake_case.
    expect(messages[0]).toMatchObject({ key: `${unlucky}:anon-1`, reason: expect.stringContaining('TypeError'), source: expect.stringMatching(/events\.raw\/\d+\/\d+$/), dead_lettered_at: expect.any(String) });
    expect(await stored(t.db, unlucky)).toBe(0);

    broken = false;
    expect(await ok(t.url, ['dlq', 'redrive', '--topic', 'events.raw'], env)).toEqual({ topic: `${prefix}events.raw`, from: `${prefix}events.raw.dlq`, redriven: 2, refused: [] });
    await until(async () => ((await stored(t.db, unlucky)) === 2 ? true : undefined));
    // Again, and limited by --since to messages dead-lettered from a time in the past: the resolver de-duplicates.
    expect(await ok(t.url, ['dlq', 'redrive', '--topic', `${prefix}events.raw`, '--since', '2020-01-01T00:00:00Z'], env)).toMatchObject({ redriven: 2 });
    expect(await ok(t.url, ['dlq', 'redrive', '--topic', 'events.raw', '--since', '2999-01-01T00:00:00Z'], env)).toMatchObject({ redriven: 0 });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await stored(t.db, unlucky)).toBe(2);
  }, 120_000);

  it.each([
    [['dlq', 'list'], 2, /--topic/],
    [['dlq', 'list', '--topic', 'nope'], 1, /--topic must be one of events\.raw/],
    [['dlq', 'redrive', '--topic', 'events.raw', '--since', 'yesterday'], 1, /--since must be an ISO 8601 time/],
  ])('svcctl %j exits %i with a message', async (args, code, message) => {
    const run = await svcctl(t.url, args, env);
    expect(run.code).toBe(code);
    expect(run.stdout).toBe('');
    expect(JSON.parse(run.stderr).error).toMatch(message);
  });
}

const stored = async (db: Db, orgId: string): Promise<number> => Number((await db('identity.events').where({ org_id: orgId }).count<Array<{ n: string }>>({ n: '*' }))[0]?.n ?? 0);

const until = <T>(probe: () => Promise<T | undefined>): Promise<T> => pollForValue(probe, { withinMs: 30_000, everyMs: 300 });

describeWithPostgres('svcctl dlq, Postgres-backed log', () => dlqSuite('postgres-log'));
describeWithKafka('svcctl dlq, Kafka', () => dlqSuite('kafka'));
