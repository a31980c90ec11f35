import { randomBytes } from 'node:crypto';
import { Agent } from 'node:https';
import { afterEach, describe, expect, it } from '@jest/globals';
import { JsonDeserializer, SchemaRegistryClient, SerdeType } from '@confluentinc/schemaregistry';
import { Type } from '@sinclair/typebox';
import { fullFormats } from 'ajv-formats/dist/formats';
import { ConfigResourceTypes, Kafka, logLevel, type Admin, type Consumer, type Producer } from 'kafkajs';
import { Registry } from 'prom-client';
import type { TopicSpec } from '@svc/contracts';
import { freePort } from '@svc/runtime';
import { describeWithKafka, kafkaEndpoints, waitFor } from '@svc/testkit';
import { runBusContract } from '../contract.suite';
import { DLQ_REASON_HEADER, DLQ_SOURCE_HEADER, deadLetterTopicFor } from '../dead-letters';
import { BusUnavailableError, SchemaViolationError } from '../errors';
import type { IncomingMessage, OutgoingMessage } from '../port';
import { partitionFor } from '../validate';
import { createKafkaBus, type KafkaBus } from './bus';
import { LAG_METRIC } from './lag';
import type { KafkaBusOptions } from './options';
import { valueSubject } from './codec';

/** Group timings small enough that a dead member's partitions move on within seconds (6 s is the broker's minimum session). */
const fastGroups: KafkaBusOptions['consumer'] = {
  sessionTimeoutMs: 6_000,
  rebalanceTimeoutMs: 6_000,
  heartbeatIntervalMs: 500,
  maxWaitTimeMs: 250,
};

const busOptions = (extra: Partial<KafkaBusOptions> = {}): KafkaBusOptions => ({
  ...kafkaEndpoints(),
  consumer: fastGroups,
  ...extra,
});

/** The registry's own client, as a foreign consumer would configure it (with the login and CA of a secured run). */
const stockRegistry = () => {
  const { registryUrl, registryAccess } = kafkaEndpoints();
  return new SchemaRegistryClient({
    baseURLs: [registryUrl],
    ...(registryAccess
      ? {
          basicAuthCredentials: { credentialsSource: 'USER_INFO' as const, userInfo: `${registryAccess.username}:${registryAccess.password}` },
          createAxiosDefaults: { httpsAgent: new Agent({ ca: registryAccess.ca }) },
        }
      : {}),
  });
};

/** Plain kafkajs, none of the adapter's code: what a foreign producer or consumer would use. */
const plainKafka = () => {
  const { brokers, ssl, sasl } = kafkaEndpoints();
  return new Kafka({ brokers, ...(ssl ? { ssl } : {}), ...(sasl ? { sasl } : {}), clientId: 'foreign', logLevel: logLevel.NOTHING });
};

describeWithKafka('kafka adapter', () => {
  runBusContract(
    'kafka',
    async () => {
      const bus = createKafkaBus(busOptions());
      let foreign: Producer | undefined;
      return {
        bus,
        kill: () => bus.simulateCrash(),
        // A foreign producer that never heard of the registry: plain JSON, no Confluent frame.
        produceUnchecked: async (topic, message) => {
          await bus.ensureTopics([topic]);
          foreign ??= plainKafka().producer({ allowAutoTopicCreation: false });
          await foreign.connect();
          await foreign.send({
            topic: topic.name,
            messages: [
              {
                key: message.key,
                value: JSON.stringify(message.value),
                partition: partitionFor(message.key, topic.partitions),
                ...(message.headers ? { headers: message.headers } : {}),
              },
            ],
          });
        },
        cleanup: async () => {
          await bus.close();
          await foreign?.disconnect();
        },
      };
    },
    { patienceMs: 20_000 },
  );

  describe('Kafka specifics', () => {
    const buses: KafkaBus[] = [];
    const others: Array<{ disconnect(): Promise<void> }> = [];
    const busWith = (extra: Partial<KafkaBusOptions> = {}) => {
      const bus = createKafkaBus(busOptions(extra));
      buses.push(bus);
      return bus;
    };
    const connected = async <C extends Admin | Producer | Consumer>(client: C): Promise<C> => {
      others.push(client);
      await client.connect();
      return client;
    };
    afterEach(async () => {
      for (const bus of buses.splice(0)) await bus.close();
      for (const c of others.splice(0)) await c.disconnect();
    });

    const Reading = Type.Object(
      { id: Type.String(), at: Type.String({ format: 'date-time' }), n: Type.Integer({ minimum: 0 }) },
      { $id: 'test.reading/v1', additionalProperties: false },
    );
    type Reading = { id: string; at: string; n: number };
    const topicNamed = (base: string, partitions = 1): TopicSpec<typeof Reading> => ({
      name: `kt-${randomBytes(4).toString('hex')}.${base}`,
      partitions,
      schema: Reading,
    });
    const reading = (n: number): OutgoingMessage<Reading> => ({
      key: `k${n % 3}`,
      value: { id: `r${n}`, at: new Date(1_700_000_000_000 + n).toISOString(), n },
    });
    const stored = async (topic: string): Promise<number> => {
      const admin = await connected(plainKafka().admin());
      // Moments after a topic grew, the broker may answer for a new partition "not the leader" (retriable).
      for (let attempt = 1; ; attempt++) {
        try {
          const offsets = await admin.fetchTopicOffsets(topic);
          return offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
        } catch (err) {
          if (attempt >= 40 || (err as { retriable?: unknown }).retriable !== true) throw err;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    };
    /** Reads every stored message of a topic with plain kafkajs, as raw bytes. */
    const readRaw = async (topic: string, count: number) => {
      const consumer = await connected(plainKafka().consumer({ groupId: `raw-${randomBytes(4).toString('hex')}`, maxWaitTimeInMs: 100 }));
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      const got: Array<{ key: string; value: Buffer; partition: number; headers: Record<string, string> }> = [];
      await consumer.run({
        eachMessage: async ({ message, partition }) => {
          const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
          got.push({ key: String(message.key), value: message.value ?? Buffer.alloc(0), partition, headers });
        },
      });
      await waitFor(`${count} raw messages`, () => got.length >= count, 15_000);
      return got;
    };

    it('writes what a stock Confluent JSON deserializer reads: magic byte, schema id of <topic>-value, JSON', async () => {
      const bus = busWith();
      const topic = topicNamed('stock', 3);
      const sent = [0, 1, 2, 3, 4].map(reading);
      expect(await bus.produce(topic, sent)).toEqual(sent.map(() => ({ ok: true })));

      const registry = stockRegistry();
      const latest = await registry.getLatestSchemaMetadata(valueSubject(topic.name));
      expect(latest.schemaType).toBe('JSON');
      expect(JSON.parse(latest.schema ?? '{}')).toEqual(JSON.parse(JSON.stringify(Reading)));

      // Validation is off by default; on, ajv needs the schemas' formats (date-time, uuid) from ajv-formats.
      const deserializer = new JsonDeserializer(registry, SerdeType.VALUE, { validate: true, formats: fullFormats });
      const raw = await readRaw(topic.name, sent.length);
      for (const m of raw) {
        expect(m.value[0]).toBe(0);
        expect(m.value.readUInt32BE(1)).toBe(latest.id);
        expect(m.partition).toBe(partitionFor(m.key, 3));
      }
      const values = await Promise.all(raw.map((m) => deserializer.deserialize(topic.name, m.value) as Promise<Reading>));
      expect(values.sort((a, b) => a.n - b.n)).toEqual(sent.map((m) => m.value));
    });

    it('refuses a schema violation before anything is sent', async () => {
      const bus = busWith();
      const topic = topicNamed('refused', 2);
      await bus.ensureTopics([topic]);
      const bad = { key: 'k', value: { id: 'x', at: 'yesterday', n: 1 } };
      const err = await bus.produce<unknown>(topic, [reading(0), reading(1), bad]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SchemaViolationError);
      expect((err as Error).message).toContain('/at');
      expect((err as Error).message).toContain('message 3 of 3');
      expect(await stored(topic.name)).toBe(0);
    });

    it('parks framed messages it cannot use: unknown schema id, and a payload that breaks its schema', async () => {
      const bus = busWith();
      const topic = topicNamed('framed');
      await bus.produce(topic, [reading(0)]);
      const schemaId = (await readRaw(topic.name, 1))[0]?.value.readUInt32BE(1) ?? -1;
      const frame = (id: number, value: unknown) => {
        const header = Buffer.alloc(5);
        header.writeUInt32BE(id, 1);
        return Buffer.concat([header, Buffer.from(JSON.stringify(value))]);
      };
      const foreign = await connected(plainKafka().producer());
      await foreign.send({
        topic: topic.name,
        messages: [
          { key: 'a', value: frame(987_654, { id: 'a', at: new Date().toISOString(), n: 1 }), partition: 0 },
          { key: 'b', value: frame(schemaId, { id: 'b', at: new Date().toISOString(), n: -1 }), partition: 0 },
        ],
      });
      await bus.produce(topic, [reading(3)]);

      const good: number[] = [];
      await bus.subscribe<Reading>({
        groupId: `framed-${randomBytes(3).toString('hex')}`,
        topics: [topic],
        handler: async (batch) => {
          good.push(...batch.messages.map((m) => m.value.n));
        },
      });
      const parked: Array<IncomingMessage<unknown>> = [];
      await bus.subscribe({
        groupId: `framed-dlq-${randomBytes(3).toString('hex')}`,
        topics: [deadLetterTopicFor(topic)],
        handler: async (batch) => {
          parked.push(...batch.messages);
        },
      });
      await waitFor('both parked messages', () => parked.length === 2 && good.includes(3), 20_000);
      expect(good).toEqual([0, 3]);
      const [unknownId, broken] = parked;
      expect(unknownId?.headers[DLQ_REASON_HEADER]).toMatch(/schema id 987654/);
      expect(unknownId?.headers[DLQ_SOURCE_HEADER]).toBe(`${topic.name}/0/1`);
      expect(broken?.headers[DLQ_REASON_HEADER]).toMatch(/registered schema.*\/n must be >= 0/);
      // The dead-letter topic keeps the original bytes; reading it strips the frame.
      expect(broken?.value).toEqual({ id: 'b', at: expect.any(String), n: -1 });
    });

    it('fails fast with a retriable BusUnavailableError when no broker listens', async () => {
      const port = await freePort();
      const bus = busWith({ brokers: [`127.0.0.1:${port}`] });
      const started = Date.now();
      const err = await bus.produce(topicNamed('down'), [reading(0)]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BusUnavailableError);
      expect((err as BusUnavailableError).retriable).toBe(true);
      expect(Date.now() - started).toBeLessThan(5_000);
      await expect(bus.ensureTopics([topicNamed('down')])).rejects.toBeInstanceOf(BusUnavailableError);
      await expect(bus.subscribe({ groupId: 'g', topics: [topicNamed('down')], handler: async () => {} })).rejects.toBeInstanceOf(
        BusUnavailableError,
      );
    });

    it('fails fast with a BusUnavailableError when the schema registry is down', async () => {
      const port = await freePort();
      const bus = busWith({ registryUrl: `http://127.0.0.1:${port}/apis/ccompat/v7` });
      const started = Date.now();
      await expect(bus.produce(topicNamed('no-registry'), [reading(0)])).rejects.toBeInstanceOf(BusUnavailableError);
      expect(Date.now() - started).toBeLessThan(5_000);
    });

    it('exports consumer lag per group, topic and partition', async () => {
      const metrics = new Registry();
      const bus = busWith({ metricsRegistry: metrics });
      const topic = topicNamed('lag', 2);
      const groupId = `lag-${randomBytes(3).toString('hex')}`;
      await bus.produce(
        topic,
        Array.from({ length: 40 }, (_, n) => ({ ...reading(n), key: keyIn(n % 2, 2) })),
      );
      const lagsSeen: number[] = [];
      let handled = 0;
      await bus.subscribe<Reading>({
        groupId,
        topics: [topic],
        maxBatchSize: 5,
        handler: async (batch) => {
          const series = (await metrics.getSingleMetric(LAG_METRIC)?.get())?.values ?? [];
          lagsSeen.push(...series.map((s) => s.value));
          handled += batch.messages.length;
        },
      });
      await waitFor('every message', () => handled === 40, 15_000);
      // Set after each commit (so just after the last handler returns): it counts down to zero on every partition.
      const series = (p: number) => `${LAG_METRIC}{group="${groupId}",topic="${topic.name}",partition="${p}"} 0`;
      let text = '';
      const deadline = Date.now() + 5_000;
      while (!(text.includes(series(0)) && text.includes(series(1))) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        text = await metrics.metrics();
      }
      expect(text).toContain(series(0));
      expect(text).toContain(series(1));
      expect(Math.max(...lagsSeen)).toBeGreaterThan(0);
    });

    it('never reports a message stored that was not, even right after the topic grew under a live producer', async () => {
      const topic = topicNamed('grown', 2);
      const bus = busWith();
      expect((await bus.produce(topic, [reading(0)]))[0]).toEqual({ ok: true }); // the producer now knows 2 partitions
      const grown = { ...topic, partitions: 4 };
      await busWith().ensureTopics([grown]);
      await bus.ensureTopics([grown]);
      const sent = [0, 1, 2, 3].map((p) => ({ ...reading(p), key: keyIn(p, 4) }));
      const results = await bus.produce(grown, sent);
      const ok = results.filter((r) => r.ok).length;
      for (const r of results) if (!r.ok) expect(r.error.message).toMatch(/not in the producer's metadata/);
      expect(await stored(topic.name)).toBe(1 + ok);
    });

    it('ensureTopics creates partitions and a schema subject, grows, and never shrinks', async () => {
      const topic = topicNamed('grow', 2);
      await busWith().ensureTopics([topic]);
      await busWith().ensureTopics([{ ...topic, partitions: 5 }]);
      await busWith().ensureTopics([{ ...topic, partitions: 3 }]);
      const admin = await connected(plainKafka().admin());
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic.name] });
      expect(topics[0]?.partitions).toHaveLength(5);
      // Timestamps are when the log stored a message (the port's IncomingMessage.timestamp), not the producer's clock.
      const { resources } = await admin.describeConfigs({
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic.name, configNames: ['message.timestamp.type'] }],
        includeSynonyms: false,
      });
      expect(resources[0]?.configEntries[0]?.configValue).toBe('LogAppendTime');
      // A topic kept forever (the raw events a replay rebuilds from) has no time limit.
      const kept = { ...topicNamed('kept'), retainForever: true };
      await busWith().ensureTopics([kept]);
      const keptConfig = await admin.describeConfigs({
        resources: [{ type: ConfigResourceTypes.TOPIC, name: kept.name, configNames: ['retention.ms'] }],
        includeSynonyms: false,
      });
      expect(keptConfig.resources[0]?.configEntries[0]?.configValue).toBe('-1');
      const registry = stockRegistry();
      expect(await registry.getAllVersions(valueSubject(topic.name))).toEqual([1]);
      // Dead-letter topics get no schema; a reader creates a missing topic but registers nothing.
      await busWith().ensureTopics([deadLetterTopicFor(topic)]);
      const readOnly = topicNamed('read-only');
      await busWith().subscribe({ groupId: `ro-${randomBytes(3).toString('hex')}`, topics: [readOnly], handler: async () => {} });
      expect((await admin.listTopics()).filter((t) => t === readOnly.name)).toHaveLength(1);
      const subjects = await registry.getAllSubjects();
      expect(subjects).not.toContain(valueSubject(deadLetterTopicFor(topic).name));
      expect(subjects).not.toContain(valueSubject(readOnly.name));
    });
  });
});

/** A key Kafka's partitioner puts in partition `p` of `n`. */
function keyIn(p: number, n: number): string {
  for (let i = 0; ; i++) if (partitionFor(`key-${i}`, n) === p) return `key-${i}`;
}

