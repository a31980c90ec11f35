import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Type } from '@sinclair/typebox';
import type pg from 'pg';
import type { TopicSpec } from '@svc/contracts';
import { createDb, freePort, type Db } from '@svc/runtime';
import { Gates, createTestDatabase, describeWithPostgres, waitFor, type TestDatabase } from '@svc/testkit';
import { runBusContract } from '../contract.suite';
import { BusUnavailableError } from '../errors';
import type { IncomingMessage, OutgoingMessage } from '../port';
import { createPostgresLogBus, type PostgresLogBus, type PostgresLogBusOptions } from './bus';
import { busMigrations } from './migrations';
import { append, ensureTopic } from './store';

describeWithPostgres('Postgres log bus', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase([busMigrations]);
  });
  afterAll(() => t.drop());

  runBusContract('postgres-log', async () => {
    const bus = createPostgresLogBus({ db: t.db });
    return {
      bus,
      kill: () => bus.simulateCrash(),
      produceUnchecked: (topic, message) => appendUnchecked(t.db, topic, [message]),
      cleanup: () => bus.close(),
    };
  });

  describe('Postgres specifics', () => {
    const buses: PostgresLogBus[] = [];
    const extraDbs: Db[] = [];
    const busWith = (opts: Partial<PostgresLogBusOptions> = {}) => {
      const bus = createPostgresLogBus({ db: t.db, ...opts });
      buses.push(bus);
      return bus;
    };
    const gates = new Gates();
    const gate = () => gates.gate();
    afterEach(async () => {
      gates.releaseAll();
      for (const bus of buses.splice(0)) await bus.close();
      for (const db of extraDbs.splice(0)) await db.destroy();
    });
    const topicNamed = (base: string, partitions = 1): TopicSpec => ({
      name: `pg-${randomBytes(4).toString('hex')}.${base}`,
      partitions,
      schema: Type.Object({ w: Type.Integer(), i: Type.Integer() }),
    });

    it('never skips: concurrent appends to one partition get gap-free offsets, read in order by a live consumer', async () => {
      const topic = topicNamed('hot');
      const consumerBus = busWith({ pollFallbackMs: 50 });
      await consumerBus.ensureTopics([topic]);
      const seen: Array<IncomingMessage<{ w: number; i: number }>> = [];
      // A consumer reading while appends commit is what would catch a skipped offset.
      await consumerBus.subscribe<{ w: number; i: number }>({
        groupId: `hot-${randomBytes(3).toString('hex')}`,
        topics: [topic],
        maxBatchSize: 13,
        handler: async (batch) => {
          seen.push(...batch.messages);
        },
      });

      const producerDb = createDb({ url: t.url, poolMax: 24, applicationName: 'svc-test-producers' });
      extraDbs.push(producerDb);
      const producerBus = busWith({ db: producerDb });
      const workers = 24;
      const perWorker = await Promise.all(
        Array.from({ length: workers }, async (_, w) => {
          let i = 0;
          for (let call = 0; call < 20; call++) {
            const size = 1 + ((w + call) % 9);
            const batch = Array.from({ length: size }, () => ({ key: 'same-key', value: { w, i: i++ } }));
            expect(await producerBus.produce(topic, batch)).toEqual(batch.map(() => ({ ok: true })));
          }
          return i;
        }),
      );
      const total = perWorker.reduce((a, b) => a + b, 0);

      await waitFor('the consumer to read every message', () => seen.length >= total, 30_000);
      expect(seen.map((m) => Number(m.offset))).toEqual(range(0, total));
      for (let w = 0; w < workers; w++) {
        // Each worker's calls were sequential, so its messages must come out in its order.
        expect(seen.filter((m) => m.value.w === w).map((m) => m.value.i)).toEqual(range(0, perWorker[w] ?? 0));
      }
      const stored = await t.db('bus.messages').where({ topic: topic.name }).count({ n: '*' }).max({ hi: 'offset' }).first();
      expect(Number(stored?.n)).toBe(total);
      expect(Number(stored?.hi)).toBe(total - 1);
    });

    it('never lets two members handle one partition at once, even while a joiner wants it', async () => {
      const topic = topicNamed('exclusive', 2);
      const groupId = `excl-${randomBytes(3).toString('hex')}`;
      const a = busWith();
      await a.produce(
        topic,
        range(0, 40).map((i) => ({ key: `k${i}`, value: { w: 0, i } })),
      );
      const held = gate();
      const byA: number[] = [];
      const byB: number[] = [];
      let aHolding = false;
      await a.subscribe<{ w: number; i: number }>({
        groupId,
        topics: [topic],
        maxBatchSize: 5,
        handler: async (batch) => {
          aHolding = true;
          await held.promise;
          byA.push(...batch.messages.map((m) => m.value.i));
        },
      });
      await waitFor('A to hold a batch', () => aHolding, 10_000);
      await busWith().subscribe<{ w: number; i: number }>({
        groupId,
        topics: [topic],
        handler: async (batch) => {
          byB.push(...batch.messages.map((m) => m.value.i));
        },
      });
      // B is assigned a partition A still holds: it must wait for A's batch, however long.
      // A negative cannot be awaited; 1.5 s spans B's join and at least one rebalance tick.
      await sleep(1_500);
      expect(byB).toEqual([]);
      held.resolve();
      await waitFor('every message', () => new Set([...byA, ...byB]).size === 40, 10_000);
      expect(byB.length).toBeGreaterThan(0);
      expect(byA.length + byB.length).toBe(40); // handed over at the committed offset: nothing twice
    });

    it('wakes a waiting consumer through LISTEN/NOTIFY, long before the fallback poll', async () => {
      const topic = topicNamed('wake');
      // Fallback poll and rebalance tick far away: only a notification can wake the consumer quickly.
      const bus = busWith({ pollFallbackMs: 30_000, heartbeatMs: 30_000, sessionTimeoutMs: 60_000 });
      await bus.ensureTopics([topic]);
      const arrivals = new Map<number, number>();
      await bus.subscribe<{ w: number; i: number }>({
        groupId: `wake-${randomBytes(3).toString('hex')}`,
        topics: [topic],
        handler: async (batch) => {
          for (const m of batch.messages) arrivals.set(m.value.i, Date.now());
        },
      });
      await bus.produce(topic, [{ key: 'k', value: { w: 0, i: 0 } }]);
      await waitFor('the warm-up message', () => arrivals.has(0), 10_000);

      const latencies: number[] = [];
      for (let i = 1; i <= 5; i++) {
        await sleep(50); // let the consumer go back to waiting
        const sentAt = Date.now();
        await bus.produce(topic, [{ key: 'k', value: { w: 0, i } }]);
        await waitFor(`message ${i}`, () => arrivals.has(i), 10_000);
        latencies.push((arrivals.get(i) ?? Infinity) - sentAt);
      }
      expect(Math.max(...latencies)).toBeLessThan(500);
    });

    it('retention deletes old messages only, and offsets are never reused', async () => {
      const topic = topicNamed('old');
      const bus = busWith({ retentionHours: 1 });
      // One produce call each: one record batch each, the retention's unit.
      for (const i of range(0, 3)) await bus.produce(topic, [{ key: 'k', value: { w: 0, i } }]);
      await t.db('bus.batches')
        .where({ topic: topic.name })
        .whereIn('base_offset', [0, 1])
        .update({ created_at: t.db.raw("now() - interval '2 hours'") });

      expect(await bus.sweepRetention()).toBeGreaterThanOrEqual(2);
      const left = await t.db('bus.messages').where({ topic: topic.name }).orderBy('offset').pluck('offset');
      expect(left.map(Number)).toEqual([2]);

      await bus.produce(topic, [{ key: 'k', value: { w: 0, i: 3 } }]);
      const seen: number[] = [];
      await bus.subscribe<{ w: number; i: number }>({
        groupId: `old-${randomBytes(3).toString('hex')}`,
        topics: [topic],
        handler: async (batch) => {
          seen.push(...batch.messages.map((m) => Number(m.offset)));
        },
      });
      await waitFor('the surviving messages', () => seen.length === 2, 10_000);
      expect(seen).toEqual([2, 3]);
    });

    it('retention never deletes from a topic kept forever (the raw events a replay needs)', async () => {
      const kept = { ...topicNamed('kept'), retainForever: true };
      const bus = busWith({ retentionHours: 1 });
      await bus.produce(kept, [{ key: 'k', value: { w: 0, i: 0 } }]);
      await t.db('bus.batches').where({ topic: kept.name }).update({ created_at: t.db.raw("now() - interval '2 hours'") });
      await bus.sweepRetention();
      expect(await t.db('bus.messages').where({ topic: kept.name }).pluck('offset')).toHaveLength(1);
    });

    it('a consumer whose session is cut reconnects and resumes from its committed offset', async () => {
      const topic = topicNamed('cut', 2);
      const instanceId = `cut-${randomBytes(3).toString('hex')}`;
      const bus = busWith({ instanceId });
      await bus.ensureTopics([topic]);
      const deliveries: string[] = [];
      await bus.subscribe<{ w: number; i: number }>({
        groupId: instanceId,
        topics: [topic],
        maxBatchSize: 5,
        handler: async (batch) => {
          deliveries.push(...batch.messages.map((m) => `${m.value.w}-${m.value.i}`));
        },
      });
      const firstHalf = range(0, 40).map((i) => ({ key: `k${i % 7}`, value: { w: 0, i } }));
      await bus.produce(topic, firstHalf);
      await waitFor('the first half', () => new Set(deliveries).size === 40, 10_000);

      const killed = await t.db.raw<{ rows: unknown[] }>(
        "select pg_terminate_backend(pid) from pg_stat_activity where application_name like ?",
        [`svc-bus ${instanceId}%`],
      );
      expect(killed.rows.length).toBeGreaterThanOrEqual(1);
      const secondHalf = range(0, 40).map((i) => ({ key: `k${i % 7}`, value: { w: 1, i } }));
      await bus.produce(topic, secondHalf);
      await waitFor('the second half', () => new Set(deliveries).size === 80, 15_000);
      // Everything committed before the cut stays done: at most the uncommitted batches (≤ 5 each) come again.
      expect(deliveries.length - 80).toBeLessThanOrEqual(10);
      expect(deliveries.slice(0, 40).every((d) => d.startsWith('0-'))).toBe(true);
    });

    it('ensureTopics creates partitions, grows them, and never shrinks them', async () => {
      const topic = topicNamed('grow', 2);
      const bus = busWith();
      await bus.ensureTopics([topic]);
      await bus.ensureTopics([{ ...topic, partitions: 5 }]);
      await busWith().ensureTopics([{ ...topic, partitions: 3 }]);
      const row = await t.db('bus.topics').where({ name: topic.name }).first();
      expect(row?.partitions).toBe(5);
      const heads = await t.db('bus.partitions').where({ topic: topic.name }).orderBy('partition').pluck('partition');
      expect(heads).toEqual([0, 1, 2, 3, 4]);
    });

    describe('database unavailable', () => {
      let silent: Server | undefined;
      const sockets = new Set<Socket>();
      afterEach(async () => {
        for (const s of sockets) s.destroy();
        await new Promise<void>((resolve) => (silent ? silent.close(() => resolve()) : resolve()));
        silent = undefined;
      });

      it('produce fails fast with a retriable BusUnavailableError when nothing listens', async () => {
        const port = await freePort();
        const db = createDb({ url: `postgres://u:p@127.0.0.1:${port}/none` });
        extraDbs.push(db);
        const bus = busWith({ db });
        const started = Date.now();
        const err = await bus.produce(topicNamed('down'), [{ key: 'k', value: { w: 0, i: 0 } }]).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(BusUnavailableError);
        expect((err as BusUnavailableError).retriable).toBe(true);
        expect(Date.now() - started).toBeLessThan(2_000);
        await expect(bus.ensureTopics([topicNamed('down')])).rejects.toBeInstanceOf(BusUnavailableError);
        await expect(
          bus.subscribe({ groupId: 'g', topics: [topicNamed('down')], handler: async () => {} }),
        ).rejects.toBeInstanceOf(BusUnavailableError);
      });

      it('produce gives up within its deadline when the server accepts but never answers', async () => {
        silent = createServer((s) => {
          sockets.add(s);
        });
        await new Promise<void>((resolve) => silent?.listen(0, '127.0.0.1', resolve));
        const address = silent.address();
        const port = typeof address === 'object' && address ? address.port : 0;
        const db = createDb({ url: `postgres://u:p@127.0.0.1:${port}/none` });
        extraDbs.push(db);
        const bus = busWith({ db, operationTimeoutMs: 500 });
        const started = Date.now();
        await expect(bus.produce(topicNamed('hang'), [{ key: 'k', value: { w: 0, i: 0 } }])).rejects.toBeInstanceOf(
          BusUnavailableError,
        );
        expect(Date.now() - started).toBeLessThan(2_000);
        for (const s of sockets) s.destroy(); // lets the pool's stuck connection attempt fail, so destroy() returns
      });
    });
  });
});

/** Appends without the schema check, as a foreign producer (or a hand-written INSERT) would. */
async function appendUnchecked(db: Db, topic: TopicSpec, messages: OutgoingMessage<unknown>[]): Promise<void> {
  // knex's pg dialect pools plain pg.Client objects.
  const conn = (await db.client.acquireConnection()) as pg.Client;
  try {
    await conn.query('begin');
    const partitions = await ensureTopic(conn, topic.name, topic.partitions);
    await append(conn, topic.name, partitions, messages);
    await conn.query('commit');
  } catch (err) {
    await conn.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    await db.client.releaseConnection(conn);
  }
}


const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

