import { createHash, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Type, type Static } from '@sinclair/typebox';
import type { TopicSpec } from '@svc/contracts';
import { Gates } from '@svc/testkit';
import { DLQ_REASON_HEADER, DLQ_SOURCE_HEADER, deadLetterTopicFor } from './dead-letters';
import { SchemaViolationError } from './errors';
import type { Bus, IncomingMessage, MessageBatch, OutgoingMessage, ProduceResult } from './port';
import { partitionFor } from './validate';

/**
 * The ONE contract every bus adapter passes. It only uses the port, plus two
 * hooks an adapter's test provides (crash simulation and a raw append), so
 * the Kafka and Postgres-log tests call the same function. Topic and group
 * names are random per test, so suites may run in parallel on one broker.
 */

/** One running "process" of the adapter under test. */
export interface BusUnderTest {
  bus: Bus;
  /** Dies like a killed process: its consumers stop at once, commit nothing and do not say goodbye. */
  kill(): Promise<void>;
  /** Appends a message WITHOUT the schema check, as a foreign or buggy producer would. */
  produceUnchecked(topic: TopicSpec, message: OutgoingMessage<unknown>): Promise<void>;
  /** Releases everything; called after every test, also after kill(). */
  cleanup(): Promise<void>;
}

export interface ContractOptions {
  /** Upper bound for anything that should happen "soon" (default 20 s; Kafka rebalances are slow). */
  patienceMs?: number;
}

const Payload = Type.Object(
  { id: Type.String(), key: Type.String(), seq: Type.Integer({ minimum: 0 }), body: Type.Optional(Type.String()) },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;
type Got = IncomingMessage<Payload>;

export function runBusContract(name: string, makeBus: () => Promise<BusUnderTest>, options: ContractOptions = {}): void {
  const patience = options.patienceMs ?? 20_000;

  describe(`bus contract: ${name}`, () => {
    const opened: BusUnderTest[] = [];
    const open = async (): Promise<BusUnderTest> => {
      const b = await makeBus();
      opened.push(b);
      return b;
    };
    const gates = new Gates();
    const gate = () => gates.gate();
    afterEach(async () => {
      gates.releaseAll();
      for (const b of opened.splice(0).reverse()) await b.cleanup();
    });

    const run = randomBytes(3).toString('hex');
    let counter = 0;
    const topicNamed = (base: string, partitions: number): TopicSpec => ({
      name: `ct-${run}-${++counter}.${base}`,
      partitions,
      schema: Payload,
    });
    const groupNamed = (base: string) => `ct-${run}-${++counter}-${base}`;

    async function waitFor(what: string, cond: () => boolean | Promise<boolean>, ms = patience): Promise<void> {
      const deadline = Date.now() + ms;
      while (!(await cond())) {
        if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        await sleep(20);
      }
    }

    async function produceOk(bus: Bus, topic: TopicSpec, messages: OutgoingMessage<Payload>[]): Promise<void> {
      const results: ProduceResult[] = await bus.produce(topic, messages);
      expect(results).toEqual(messages.map(() => ({ ok: true })));
    }

    it('keeps the order of each key, and puts each key where Kafka would', async () => {
      const { bus } = await open();
      const topic = topicNamed('order', 4);
      await bus.ensureTopics([topic]);
      const keys = Array.from({ length: 12 }, (_, i) => `customer-${i}`);
      // Seq-major, so consecutive messages alternate keys and partitions.
      const all = range(0, 25).flatMap((seq) => keys.map((key) => message(key, seq)));
      for (const chunk of chunks(all, 40)) await produceOk(bus, topic, chunk);

      const rec = new Recorder();
      await bus.subscribe({ groupId: groupNamed('order'), topics: [topic], handler: rec.handler, maxBatchSize: 17 });
      await waitFor('every message', () => rec.ids().size === all.length);

      for (const key of keys) {
        const got = rec.messages.filter((m) => m.key === key);
        expect(got.map((m) => m.value.seq)).toEqual(range(0, 25));
        expect(new Set(got.map((m) => m.partition))).toEqual(new Set([partitionFor(key, 4)]));
      }
      expect(new Set(rec.messages.map((m) => m.partition)).size).toBeGreaterThanOrEqual(3);
      for (const p of range(0, 4)) {
        const offsets = rec.messages.filter((m) => m.partition === p).map((m) => BigInt(m.offset));
        expect(offsets).toEqual([...offsets].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
        expect(new Set(offsets).size).toBe(offsets.length);
      }
      for (const b of rec.batches) expect(b.messages.every((m) => m.partition === b.partition)).toBe(true);
    });

    it('redelivers a batch whose handler threw, and commits none of it', async () => {
      const groupId = groupNamed('retry');
      const topic = topicNamed('retry', 1);
      const { bus } = await open();
      await bus.ensureTopics([topic]);
      await produceOk(bus, topic, range(0, 6).map((seq) => message('k', seq)));

      // A keeps failing on the batch holding seq 3.
      const calls: Array<{ seqs: number[]; threw: boolean }> = [];
      const subA = await bus.subscribe<Payload>({
        groupId,
        topics: [topic],
        maxBatchSize: 2,
        handler: async (batch) => {
          const seqs = batch.messages.map((m) => m.value.seq);
          calls.push({ seqs, threw: seqs.includes(3) });
          if (seqs.includes(3)) throw new Error('handler failed on purpose');
        },
      });
      await waitFor('the failing batch to come again', () => calls.filter((c) => c.threw).length >= 2);
      const [firstFailure, secondFailure] = calls.filter((c) => c.threw);
      const from = firstFailure?.seqs[0] ?? -1;
      expect(secondFailure?.seqs[0]).toBe(from);
      expect(calls.filter((c) => !c.threw).flatMap((c) => c.seqs)).toEqual(range(0, from));
      await subA.stop();

      // The failed batch was never committed: the next member starts at it.
      const rec = new Recorder();
      await (await open()).bus.subscribe({ groupId, topics: [topic], handler: rec.handler });
      await waitFor('the rest of the partition', () => rec.seqs().includes(5));
      expect(rec.seqs()).toEqual(range(from, 6));
    });

    it('redelivers what a killed consumer had in hand, and nothing it had committed', async () => {
      const groupId = groupNamed('kill');
      const topic = topicNamed('kill', 1);
      const a = await open();
      await a.bus.ensureTopics([topic]);
      await produceOk(a.bus, topic, range(0, 5).map((seq) => message('k', seq)));

      const handledByA: number[] = [];
      let inHand: number[] | undefined;
      const held = gate();
      await a.bus.subscribe<Payload>({
        groupId,
        topics: [topic],
        handler: async (batch) => {
          const seqs = batch.messages.map((m) => m.value.seq);
          if (seqs.some((s) => s >= 5)) {
            inHand = seqs;
            await held.promise;
          } else {
            handledByA.push(...seqs);
          }
        },
      });
      await waitFor('A to handle the first messages', () => handledByA.length === 5);
      await produceOk(a.bus, topic, range(5, 10).map((seq) => message('k', seq)));
      await waitFor('A to hold a batch of the new messages', () => inHand !== undefined);

      await a.kill();
      held.resolve(); // the dead process's handler returning must not commit anything

      const b = await open();
      const rec = new Recorder();
      await b.bus.subscribe({ groupId, topics: [topic], handler: rec.handler });
      await waitFor('B to reach the last message', () => rec.seqs().includes(9));
      expect(inHand?.[0]).toBe(5);
      expect(rec.seqs()).toEqual(range(5, 10));
    });

    it('splits the partitions between two members, and the survivor takes them all when one leaves', async () => {
      const groupId = groupNamed('split');
      const topic = topicNamed('split', 4);
      const a = await open();
      const b = await open();
      await a.bus.ensureTopics([topic]);
      const keys = range(0, 4).map((p) => keyInPartition(p, 4));
      const byA = new Recorder();
      const byB = new Recorder();
      await a.bus.subscribe({ groupId, topics: [topic], handler: byA.handler });
      const subB = await b.bus.subscribe({ groupId, topics: [topic], handler: byB.handler });

      // Produce one message per partition per round until a round shows the split.
      let round = 0;
      const produced: string[] = [];
      const nextRound = async () => {
        round++;
        const batch = keys.map((key) => message(key, round));
        await produceOk(a.bus, topic, batch);
        produced.push(...batch.map((m) => m.value.id));
        const ids = new Set(batch.map((m) => m.value.id));
        const mine = (r: Recorder) => new Set(r.messages.filter((m) => ids.has(m.value.id)).map((m) => m.partition));
        await waitFor(`round ${round} to be consumed`, () => union(mine(byA), mine(byB)).size === 4);
        return { a: mine(byA), b: mine(byB) };
      };
      await waitFor('the group to split the partitions', async () => {
        const seen = await nextRound();
        return seen.a.size > 0 && seen.b.size > 0 && seen.a.size + seen.b.size === 4;
      });

      await subB.stop();
      await waitFor('A to own every partition', async () => (await nextRound()).a.size === 4);
      expect(union(byA.ids(), byB.ids())).toEqual(new Set(produced));
    });

    it('reports where each partition ends, so a reader knows when it has read everything', async () => {
      const { bus } = await open();
      const topic = topicNamed('ends', 3);
      await bus.ensureTopics([topic]);
      expect(await bus.endOffsets(topic)).toEqual(['0', '0', '0']);
      const all = range(0, 30).map((seq) => message(`k${seq % 7}`, seq));
      await produceOk(bus, topic, all);
      const ends = await bus.endOffsets(topic);
      for (const p of range(0, 3)) {
        expect(ends[p]).toBe(String(all.filter((m) => partitionFor(m.key, 3) === p).length));
      }
    });

    it('gives a second group every message too', async () => {
      const { bus } = await open();
      const topic = topicNamed('fanout', 3);
      await bus.ensureTopics([topic]);
      const all = range(0, 150).map((seq) => message(`k${seq % 10}`, seq));
      await produceOk(bus, topic, all.slice(0, 75));
      const first = new Recorder();
      const second = new Recorder();
      await bus.subscribe({ groupId: groupNamed('one'), topics: [topic], handler: first.handler });
      await bus.subscribe({ groupId: groupNamed('two'), topics: [topic], handler: second.handler });
      await produceOk(bus, topic, all.slice(75));
      const everything = new Set(all.map((m) => m.value.id));
      await waitFor('both groups to see everything', () => first.ids().size === 150 && second.ids().size === 150);
      expect(first.ids()).toEqual(everything);
      expect(second.ids()).toEqual(everything);
    });

    it('finishes the batch in hand on stop, and a restart resumes from the committed offset', async () => {
      const groupId = groupNamed('restart');
      const topic = topicNamed('restart', 1);
      const a = await open();
      await a.bus.ensureTopics([topic]);
      await produceOk(a.bus, topic, range(0, 10).map((seq) => message('k', seq)));

      const handledByA: number[] = [];
      const held = gate();
      let holding = false;
      const subA = await a.bus.subscribe<Payload>({
        groupId,
        topics: [topic],
        handler: async (batch) => {
          holding = true;
          await held.promise;
          handledByA.push(...batch.messages.map((m) => m.value.seq));
        },
      });
      await waitFor('A to hold its first batch', () => holding);
      let stopped = false;
      const stopping = subA.stop().then(() => {
        stopped = true;
      });
      await sleep(200); // a negative cannot be awaited: give a wrong stop() the chance to return early
      expect(stopped).toBe(false);
      held.resolve();
      await stopping;
      await a.bus.close();
      const k = handledByA.length;
      expect(k).toBeGreaterThan(0);
      expect(handledByA).toEqual(range(0, k));

      await produceOk((await open()).bus, topic, range(10, 15).map((seq) => message('k', seq)));
      const b = await open();
      const rec = new Recorder();
      await b.bus.subscribe({ groupId, topics: [topic], handler: rec.handler });
      await waitFor('B to reach the last message', () => rec.seqs().includes(14));
      expect(rec.seqs()).toEqual(range(k, 15));
    });

    it('loses nothing when producers append concurrently (count and checksum)', async () => {
      const topic = topicNamed('concurrent', 4);
      const consumer = await open();
      await consumer.bus.ensureTopics([topic]);
      const rec = new Recorder();
      await consumer.bus.subscribe({ groupId: groupNamed('concurrent'), topics: [topic], handler: rec.handler });

      const producers = await Promise.all(range(0, 4).map(() => open()));
      const sent = producers.map((_, p) =>
        range(0, 1000).map((seq) => ({
          key: `p${p}-k${seq % 8}`,
          value: { id: `p${p}-${seq}`, key: `p${p}-k${seq % 8}`, seq, body: randomBytes(8).toString('hex') },
        })),
      );
      await Promise.all(
        producers.map(async ({ bus }, p) => {
          for (const chunk of chunks(sent[p] ?? [], 50)) await produceOk(bus, topic, chunk);
        }),
      );
      const all = sent.flat();
      await waitFor('every message', () => rec.ids().size === all.length, Math.max(patience, 30_000));

      const firstSeen = new Map<string, Payload>();
      for (const m of rec.messages) if (!firstSeen.has(m.value.id)) firstSeen.set(m.value.id, m.value);
      expect(firstSeen.size).toBe(4000);
      expect(checksum([...firstSeen.values()])).toBe(checksum(all.map((m) => m.value)));
      for (const key of new Set(all.map((m) => m.key))) {
        const seqs = rec.messages.filter((m) => m.key === key).map((m) => m.value.seq);
        expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
      }
    });

    it('refuses a message that fails its schema, naming topic and field, and stores none of the call', async () => {
      const { bus } = await open();
      const topic = topicNamed('strict', 1);
      await bus.ensureTopics([topic]);
      const bad = { key: 'k', value: { id: 'bad', key: 'k', seq: 'one' } };
      const err = await bus.produce<unknown>(topic, [message('k', 0), bad]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SchemaViolationError);
      expect((err as SchemaViolationError).topic).toBe(topic.name);
      expect((err as Error).message).toContain(topic.name);
      expect((err as Error).message).toContain('/seq');

      await produceOk(bus, topic, [message('k', 1)]);
      const rec = new Recorder();
      await bus.subscribe({ groupId: groupNamed('strict'), topics: [topic], handler: rec.handler });
      await waitFor('the sentinel', () => rec.seqs().includes(1));
      expect(rec.seqs()).toEqual([1]);
    });

    it('parks an undecodable message in the dead-letter topic with the reason, and goes on', async () => {
      const { bus, produceUnchecked } = await open();
      const topic = topicNamed('dlq', 1);
      const dlq = deadLetterTopicFor(topic);
      await bus.ensureTopics([topic]);
      const badValue = { id: 'bad', key: 'k', seq: -1 };
      await produceOk(bus, topic, [message('k', 0)]);
      await produceUnchecked(topic, { key: 'k', value: badValue, headers: { origin: 'test' } });
      await produceOk(bus, topic, [message('k', 2)]);

      const rec = new Recorder();
      await bus.subscribe({ groupId: groupNamed('main'), topics: [topic], handler: rec.handler });
      await waitFor('the message after the bad one', () => rec.seqs().includes(2));
      expect(rec.seqs()).toEqual([0, 2]);

      const parked: Array<IncomingMessage<unknown>> = [];
      await bus.subscribe<unknown>({
        groupId: groupNamed('dlq'),
        topics: [dlq],
        handler: async (batch) => {
          parked.push(...batch.messages);
        },
      });
      await waitFor('the dead-lettered message', () => parked.length > 0);
      const [first] = rec.messages;
      const [dead] = parked;
      expect(parked).toHaveLength(1);
      expect(dead?.value).toEqual(badValue);
      expect(dead?.key).toBe('k');
      expect(dead?.headers.origin).toBe('test');
      expect(dead?.headers[DLQ_REASON_HEADER]).toMatch(/\/seq/);
      expect(dead?.headers[DLQ_SOURCE_HEADER]).toBe(`${topic.name}/0/${BigInt(first?.offset ?? -2) + 1n}`);
    });

    it('lets batches gather up to gather.maxWaitMs, and no longer', async () => {
      const { bus } = await open();
      const topic = topicNamed('gather', 1);
      await bus.ensureTopics([topic]);
      const rec = new Recorder();
      const maxWaitMs = 1_500;
      await bus.subscribe({ groupId: groupNamed('gathering'), topics: [topic], handler: rec.handler, gather: { minBytes: 1 << 20, maxWaitMs } });
      await produceOk(bus, topic, [message('warm-up', 0)]);
      await waitFor('the warm-up message', () => rec.ids().size === 1);

      // Ten calls 50 ms apart: delivered at once, they would come as about ten batches.
      const trickle = range(1, 11).map((seq) => message(`k${seq}`, seq));
      for (const m of trickle) {
        await produceOk(bus, topic, [m]);
        await sleep(50);
      }
      const lastProduced = Date.now();
      await waitFor('the trickle', () => rec.ids().size === 11);
      expect(Date.now() - lastProduced).toBeLessThan(maxWaitMs + 1_500);
      const batchesOfTrickle = rec.batches.filter((b) => b.messages.some((m) => m.value.seq > 0));
      expect(batchesOfTrickle.length).toBeLessThanOrEqual(2);
      expect(rec.seqs()).toEqual(range(0, 11));
    });

    it('refuses a gather it cannot honour', async () => {
      const { bus } = await open();
      const topic = topicNamed('gather-bad', 1);
      const handler = new Recorder().handler;
      for (const gather of [{ minBytes: 0, maxWaitMs: 100 }, { minBytes: 1024, maxWaitMs: -1 }, { minBytes: 1024, maxWaitMs: 60_000 }]) {
        await expect(bus.subscribe({ groupId: groupNamed('bad'), topics: [topic], handler, gather })).rejects.toThrow(/invalid gather/);
      }
    });

    it('delivers nothing while paused, and everything after resume', async () => {
      const { bus } = await open();
      const topic = topicNamed('pause', 2);
      await bus.ensureTopics([topic]);
      const rec = new Recorder();
      const sub = await bus.subscribe({ groupId: groupNamed('paused'), topics: [topic], handler: rec.handler });
      await produceOk(bus, topic, [message('warm-up', 0)]);
      await waitFor('the warm-up message', () => rec.ids().size === 1);

      sub.pause();
      const later = range(1, 11).map((seq) => message(`k${seq}`, seq));
      await produceOk(bus, topic, later);
      // A witness group proves the messages were deliverable all along.
      const witness = new Recorder();
      await bus.subscribe({ groupId: groupNamed('witness'), topics: [topic], handler: witness.handler });
      await waitFor('the witness to see them', () => witness.ids().size === 11);
      await sleep(300); // a negative cannot be awaited: leave the paused consumer time to misbehave
      expect(rec.ids().size).toBe(1);

      sub.resume();
      await waitFor('the resumed consumer to catch up', () => rec.ids().size === 11);
    });
  });
}

function message(key: string, seq: number): OutgoingMessage<Payload> {
  return { key, value: { id: `${key}#${seq}`, key, seq } };
}

/** Collects what a handler receives. */
class Recorder {
  readonly batches: MessageBatch<Payload>[] = [];
  readonly handler = async (batch: MessageBatch<Payload>): Promise<void> => {
    this.batches.push(batch);
  };
  get messages(): Got[] {
    return this.batches.flatMap((b) => b.messages);
  }
  ids(): Set<string> {
    return new Set(this.messages.map((m) => m.value.id));
  }
  seqs(): number[] {
    return this.messages.map((m) => m.value.seq);
  }
}

/** A key that Kafka's partitioner puts in partition `p`. */
function keyInPartition(p: number, partitions: number): string {
  for (let i = 0; ; i++) if (partitionFor(`key-${i}`, partitions) === p) return `key-${i}`;
}

function checksum(values: Payload[]): string {
  const lines = values.map((v) => `${v.id}|${v.key}|${v.seq}|${v.body ?? ''}`).sort();
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);
const chunks = <T>(xs: T[], n: number): T[][] => range(0, Math.ceil(xs.length / n)).map((i) => xs.slice(i * n, i * n + n));
const union = <T>(a: Set<T>, b: Set<T>): Set<T> => new Set([...a, ...b]);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
