import { describe, expect, it } from '@jest/globals';
import { CompressionTypes, type Kafka, type Producer, type ProducerBatch, type RecordMetadata } from 'kafkajs';
import { ProducerPool, type PartitionedMessage } from './send';

type Answer = (batch: ProducerBatch) => Promise<RecordMetadata[]>;

/** kafkajs stand-in: every producer records its sendBatch calls and answers as `answer` says. */
function fakeKafka(answer: Answer) {
  const calls: Array<{ producer: number; batch: ProducerBatch }> = [];
  let made = 0;
  const kafka = {
    producer: () => {
      const id = made++;
      return {
        connect: async () => {},
        disconnect: async () => {},
        sendBatch: async (batch: ProducerBatch) => {
          calls.push({ producer: id, batch });
          return answer(batch);
        },
      } as unknown as Producer;
    },
  } as unknown as Kafka;
  return { kafka, calls };
}

/** Every partition of the request stored. */
const storeAll: Answer = async (batch) =>
  (batch.topicMessages ?? []).flatMap(({ topic, messages }) =>
    [...new Set(messages.map((m) => m.partition as number))].map((partition) => ({ topicName: topic, partition, errorCode: 0 })),
  );

const settings = { compression: CompressionTypes.None, ackTimeoutMs: 1_000 };
const msg = (partition: number, value: string): PartitionedMessage => ({ key: `k${partition}`, value, partition });

describe('ProducerPool', () => {
  it('gathers concurrent calls into one request per producer, keeping each partition in call order', async () => {
    const { kafka, calls } = fakeKafka(storeAll);
    const pool = new ProducerPool(kafka, 2, settings);
    const results = await Promise.all([
      pool.send('t', [msg(0, 'a0'), msg(1, 'a1')]),
      pool.send('t', [msg(0, 'b0'), msg(2, 'b2')]),
      pool.send('u', [msg(1, 'c1')]),
    ]);
    expect(results).toEqual([[{ ok: true }, { ok: true }], [{ ok: true }, { ok: true }], [{ ok: true }]]);
    // Partitions 0 and 2 belong to producer 0, partition 1 to producer 1: one request each.
    expect(calls.map((c) => c.producer).sort()).toEqual([0, 1]);
    const first = calls.find((c) => c.producer === 0)?.batch;
    expect(first?.acks).toBe(-1);
    expect(first?.topicMessages).toEqual([{ topic: 't', messages: [msg(0, 'a0'), msg(0, 'b0'), msg(2, 'b2')] }]);
    const second = calls.find((c) => c.producer === 1)?.batch;
    expect(second?.topicMessages).toEqual([
      { topic: 't', messages: [msg(1, 'a1')] },
      { topic: 'u', messages: [msg(1, 'c1')] },
    ]);
  });

  it('sends what arrives during a request in the next one, after it', async () => {
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    const { kafka, calls } = fakeKafka(async (batch) => {
      if (calls.length === 1) await held;
      return storeAll(batch);
    });
    const pool = new ProducerPool(kafka, 1, settings);
    const first = pool.send('t', [msg(0, 'first')]);
    await new Promise((r) => setImmediate(r));
    const later = [pool.send('t', [msg(0, 'second')]), pool.send('t', [msg(0, 'third')])];
    await new Promise((r) => setImmediate(r));
    expect(calls).toHaveLength(1);
    release();
    await Promise.all([first, ...later]);
    expect(calls.map((c) => c.batch.topicMessages?.[0]?.messages.map((m) => m.value))).toEqual([['first'], ['second', 'third']]);
  });

  it('fails the messages of a failed request only, and reports a partition kafkajs skipped', async () => {
    const { kafka } = fakeKafka(async (batch) => {
      const messages = batch.topicMessages?.[0]?.messages ?? [];
      if (messages.some((m) => m.partition === 1)) throw new Error('NOT_LEADER');
      // Stores partition 0 but silently skips partition 2 (metadata not there yet).
      return [{ topicName: 't', partition: 0, errorCode: 0 }];
    });
    const pool = new ProducerPool(kafka, 2, settings);
    const results = await pool.send('t', [msg(0, 'a'), msg(1, 'b'), msg(2, 'c')]);
    expect(results[0]).toEqual({ ok: true });
    expect(results[1]).toMatchObject({ ok: false, error: { message: 'NOT_LEADER' } });
    expect(results[2]).toMatchObject({ ok: false, error: { message: expect.stringMatching(/partition 2 of topic t is not in the producer's metadata/) } });
  });

  it('throws when every message failed because nothing could be reached', async () => {
    const { kafka } = fakeKafka(async () => {
      throw Object.assign(new Error('Connection error: connect ECONNREFUSED'), { name: 'KafkaJSConnectionError' });
    });
    const pool = new ProducerPool(kafka, 2, settings);
    await expect(pool.send('t', [msg(0, 'a'), msg(1, 'b')])).rejects.toThrow(/ECONNREFUSED/);
  });

  it('starts a new request once one is full (the broker refuses a record batch over 1 MiB)', async () => {
    const { kafka, calls } = fakeKafka(storeAll);
    const pool = new ProducerPool(kafka, 1, settings);
    const big = 'x'.repeat(300 * 1024);
    await Promise.all([1, 2, 3, 4].map((i) => pool.send('t', [msg(0, `${i}${big}`)])));
    expect(calls.map((c) => c.batch.topicMessages?.[0]?.messages.length)).toEqual([2, 2]);
  });

  it('sends the request after a failed one through a new producer (a new producer id), and only then', async () => {
    let failNext = false;
    const disconnected: number[] = [];
    const { kafka, calls } = fakeKafka(async (batch) => {
      if (failNext) {
        failNext = false;
        throw new Error('Request timed out');
      }
      return storeAll(batch);
    });
    const made = kafka.producer.bind(kafka);
    let count = 0;
    (kafka as unknown as { producer: () => Producer }).producer = () => {
      const id = count++;
      const p = made();
      return Object.assign(p, { disconnect: async () => void disconnected.push(id) });
    };
    const pool = new ProducerPool(kafka, 1, settings);
    expect(await pool.send('t', [msg(0, 'a')])).toEqual([{ ok: true }]);
    expect(await pool.send('t', [msg(0, 'b')])).toEqual([{ ok: true }]);
    failNext = true;
    const failed = await pool.send('t', [msg(0, 'c'), msg(0, 'd')]).then(
      (r) => r,
      (err: Error) => err,
    );
    expect(failed).toEqual([
      { ok: false, error: expect.any(Error) },
      { ok: false, error: expect.any(Error) },
    ]);
    expect(await pool.send('t', [msg(0, 'e')])).toEqual([{ ok: true }]);
    expect(await pool.send('t', [msg(0, 'f')])).toEqual([{ ok: true }]);
    // Producers 0 (a, b, the failed c+d), then 1 (e, f): one renewal, the failed one disconnected.
    expect(calls.map((c) => c.producer)).toEqual([0, 0, 0, 1, 1]);
    await new Promise((r) => setImmediate(r));
    expect(disconnected).toEqual([0]);
  });
});
