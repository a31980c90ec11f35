import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { deadLetterTopicFor, type IncomingMessage, type PostgresLogBus } from '@svc/bus';
import type { RawEventEnvelope } from '@svc/contracts';
import type { Db } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { describeWithPostgres } from '@svc/testkit';
import { signalLockKey } from '@svc/identity';
import { createResolverHandler } from './resolver';
import { Harness, minutesAgo } from './test-support/harness';

/**
 * Events of one person arrive on different partitions at once, consumers
 * die mid-batch: the projections still end with one profile per person,
 * every event stored exactly once.
 */
describeWithPostgres('identity resolver under concurrency and crashes', () => {
  const h = new Harness();
  let dlq: Array<IncomingMessage<Record<string, unknown>>>;
  beforeAll(async () => {
    await h.setUp();
    dlq = await h.collect(deadLetterTopicFor(h.topics.eventsRaw));
  });
  afterAll(() => h.tearDown());

  /** Four devices per user; each device browses, identifies, and buys; another device names the email only. */
  function traffic(org: string, users: number, devices: number): RawEventEnvelope[] {
    const out: RawEventEnvelope[] = [];
    for (let d = 0; d < devices; d++) {
      for (let u = 0; u < users; u++) {
        const anon = `u${u}-d${d}`;
        const at = (n: number) => minutesAgo(100 - n - d);
        out.push(
          h.envelope(org, { type: 'page', anonymousId: anon, timestamp: at(0), context: { session: { id: `${anon}-s` } } }),
          d === devices - 1
            ? h.envelope(org, { type: 'identify', anonymousId: anon, traits: { email: `user${u}@example.com` }, timestamp: at(1) })
            : h.envelope(org, { type: 'identify', anonymousId: anon, userId: `user-${u}`, traits: { email: `user${u}@example.com` }, timestamp: at(1) }),
          h.envelope(org, { type: 'track', event: 'purchase', anonymousId: anon, properties: { value: 1 }, timestamp: at(2) }),
          h.envelope(org, { type: 'track', event: 'Viewed', anonymousId: anon, userId: d === devices - 1 ? null : `user-${u}`, timestamp: at(3) }),
        );
      }
    }
    return out;
  }

  async function expectOneProfilePerUser(org: string, users: number, devices: number, total: number): Promise<void> {
    expect(await h.count('select count(*) as n from identity.events where org_id = ?', [org])).toBe(total);
    const live = await h.liveProfiles(org);
    expect(live).toHaveLength(users);
    for (let u = 0; u < users; u++) {
      const profile = await h.profileBySignal(org, 'user_id', `user-${u}`);
      expect(profile).toMatchObject({ merged_into: null, user_id: `user-${u}`, event_count: devices * 4, session_count: devices });
      for (let d = 0; d < devices; d++) expect((await h.profileBySignal(org, 'anonymous_id', `u${u}-d${d}`))?.id).toBe(profile!.id);
      expect((await h.profileBySignal(org, 'email', `user${u}@example.com`))?.id).toBe(profile!.id);
    }
    // Every event sits on a live profile, and the counters add up to the events stored.
    expect(await h.count('select count(*) as n from identity.events e join identity.profiles p on p.id = e.profile_id where e.org_id = ? and p.merged_into is not null', [org])).toBe(0);
    expect(await h.count('select sum(event_count) as n from identity.profiles where org_id = ? and merged_into is null', [org])).toBe(total);
    expect(await new AccountsStore(h.db).monthlyUsage(org, new Date())).toBe(total);
    expect(dlq.filter((m) => (m.value as RawEventEnvelope).orgId === org)).toEqual([]);
  }

  it('several consumers on different partitions, the same users at once: one profile per user, no event lost', async () => {
    const resolvers = [];
    for (let i = 0; i < 4; i++) {
      const bus = h.newBus(h.newDb(`resolver-${i}`));
      resolvers.push(await h.startResolver({ bus, db: h.newDb(`resolver-db-${i}`), groupId: 'concurrent-resolvers', maxBatchSize: 20 }));
    }
    // Wait until the group has spread the raw topic's partitions over all four members.
    await h.waitFor('four members to own the partitions', async () => {
      const { rows } = (await h.db.raw(
        `select count(distinct l.pid) as members, count(*) as partitions from pg_locks l
         join pg_stat_activity a on a.pid = l.pid
         where l.locktype = 'advisory' and l.objsubid = 2 and a.application_name like '%concurrent-resolvers%'`,
      )) as { rows: Array<{ members: number; partitions: number }> };
      return rows[0]?.members === 4 && rows[0]?.partitions === h.topics.eventsRaw.partitions;
    });
    const org = await h.org();
    const users = 12;
    const devices = 4;
    const events = traffic(org, users, devices);
    // Four producers at once, each with a slice, as four gateway replicas would.
    await Promise.all([0, 1, 2, 3].map((k) => h.produce(events.filter((_, i) => i % 4 === k))));
    await h.waitForStored(org, events.map((e) => e.event.messageId), 60_000);
    await expectOneProfilePerUser(org, users, devices, events.length);
    // No batch was ever handed back to the bus or split: every conflict was absorbed by a retry.
    for (const r of resolvers) expect((await r.metrics.batchFailures.get()).values).toEqual([]);
    for (const r of resolvers) await r.stop();
  }, 90_000);

  it('many transactions racing on the same identities: retried, never failed, one profile per user', async () => {
    const org = await h.org();
    const users = 10;
    const devices = 6;
    const events = traffic(org, users, devices);
    const handler = createResolverHandler({ db: h.db, bus: h.bus, topics: h.topics, logger: h.logger, keys: h.keyReader(), batch: { hashes: h.hashes }, poisonAttempts: 1 });
    // One batch per device (so every batch touches every user), all at once; the four steps in order.
    const asMessages = (list: RawEventEnvelope[]): Array<IncomingMessage<RawEventEnvelope>> =>
      list.map((value, i) => ({ topic: h.topics.eventsRaw.name, partition: 0, offset: String(i), key: value.event.anonymousId, value, headers: {}, timestamp: new Date() }));
    const perDevice = Array.from({ length: devices }, (_, d) => events.filter((e) => e.event.anonymousId.endsWith(`-d${d}`)));
    await Promise.all(perDevice.map((list) => handler({ topic: h.topics.eventsRaw.name, partition: 0, messages: asMessages(list) })));
    await expectOneProfilePerUser(org, users, devices, events.length);
  }, 60_000);

  describe('a resolver killed mid-batch', () => {
    let blocker: { db: Db; release: () => Promise<void> } | undefined;
    afterEach(async () => {
      await blocker?.release();
      await blocker?.db.destroy();
      blocker = undefined;
    });

    /** Holds the advisory lock of one identity on a session of its own, so a transaction touching it waits. */
    async function holdIdentity(org: string, anonymousId: string) {
      const db = h.newDb('test-blocker');
      const conn = (await db.client.acquireConnection()) as { query(sql: string, values?: unknown[]): Promise<unknown> };
      const key = signalLockKey(org, 'anonymous_id', anonymousId).toString();
      await conn.query('select pg_advisory_lock($1)', [key]);
      let released = false;
      blocker = {
        db,
        release: async () => {
          if (released) return;
          released = true;
          await conn.query('select pg_advisory_unlock($1)', [key]);
          await db.client.releaseConnection(conn);
        },
      };
      return blocker;
    }

    const waitingOnLock = (app: string) =>
      h.waitFor(`${app} to be waiting on the identity lock`, async () =>
        (await h.count(
          `select count(*) as n from pg_stat_activity where application_name = ? and wait_event_type = 'Lock' and wait_event = 'advisory'`,
          [app],
        )) > 0,
      );

    it.each([
      ['its connections die with it: the transaction never commits', true],
      ['its transaction commits after the crash (a zombie): the redelivery finds every event stored', false],
    ])('%s; started again, nothing is lost and nothing duplicated', async (_name, killConnections) => {
      const org = await h.org();
      const resolved = await h.collect(h.topics.eventsResolved);
      const events = Array.from({ length: 30 }, (_, i) =>
        i === 10
          ? h.envelope(org, { type: 'identify', anonymousId: 'crash-dev', userId: 'carl', timestamp: minutesAgo(60 - i) })
          : h.envelope(org, { type: 'track', event: i % 7 === 0 ? 'purchase' : 'Tick', anonymousId: 'crash-dev', timestamp: minutesAgo(60 - i), context: { session: { id: `s${i % 3}` } } }),
      );
      const group = `crash-${killConnections ? 'kill' : 'zombie'}`;
      const lock = await holdIdentity(org, 'crash-dev');

      const dbA = h.newDb(`${group}-A`);
      const busA: PostgresLogBus = h.newBus(h.newDb(`${group}-A-bus`));
      const a = await h.startResolver({ bus: busA, db: dbA, groupId: group, maxBatchSize: 50 });
      await h.produce(events);
      await waitingOnLock(`${group}-A`);

      await busA.simulateCrash();
      if (killConnections) {
        await h.db.raw('select pg_terminate_backend(pid) from pg_stat_activity where application_name = ?', [`${group}-A`]);
      }
      const b = await h.startResolver({ bus: h.newBus(h.newDb(`${group}-B-bus`)), db: h.newDb(`${group}-B`), groupId: group, maxBatchSize: 50 });
      await waitingOnLock(`${group}-B`);
      await lock.release();

      await h.waitForStored(org, events.map((e) => e.event.messageId));
      await a.stop();
      expect(await h.count('select count(*) as n from identity.events where org_id = ?', [org])).toBe(30);
      expect(await h.liveProfiles(org)).toEqual([expect.objectContaining({ user_id: 'carl', event_count: 30, session_count: 3 })]);
      expect(await new AccountsStore(h.db).monthlyUsage(org, new Date())).toBe(30);
      await h.waitFor('every event on events.resolved', () =>
        events.every((e) => resolved.some((m) => m.value.messageId === e.event.messageId)),
      );
      await h.waitFor('the outbox to drain', async () => (await h.count('select count(*) as n from identity.outbox', [])) === 0);
      for (const e of events) expect(resolved.filter((m) => m.value.messageId === e.event.messageId)).toHaveLength(1);
      await b.stop();
    }, 60_000);
  });
});
