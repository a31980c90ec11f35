import { describe, expect, it, jest } from '@jest/globals';
import fc from 'fast-check';
import type { Message } from 'kafkajs';
import { crc32c } from './crc32c';
import { FramedJson } from './framed-json';
import { encodeProducePayload, framedValuesAsBuffers, installProduceEncoder, type ProduceArgs } from './produce-encoder';

/* eslint-disable @typescript-eslint/no-require-imports -- the encoders being compared are kafkajs internals */
const kafkajsCrc32c = require('kafkajs/src/protocol/recordBatch/crc32C') as (b: Buffer) => number;
const kafkajsProduceV3 = require('kafkajs/src/protocol/requests/produce/v3/request') as (a: ProduceArgs) => {
  encode: () => Promise<{ buffer: Buffer }>;
};
const produceRequests = require('kafkajs/src/protocol/requests/produce') as {
  protocol: (o: { version: number }) => (a: ProduceArgs) => { request: { apiVersion: number; encode: () => Promise<{ buffer: Buffer }> } };
};
const Long = require('kafkajs/src/utils/long') as { fromValue(v: unknown): ProduceArgs['producerId'] };
/* eslint-enable @typescript-eslint/no-require-imports */

const NOW = 1_764_000_000_123;

/** A copy of the request whose FramedJson values are the Buffers they stand for (what kafkajs can encode). */
function withBufferValues(args: ProduceArgs): ProduceArgs {
  const copy: ProduceArgs = {
    ...args,
    topicData: args.topicData.map((t) => ({ ...t, partitions: t.partitions.map((p) => ({ ...p, messages: p.messages.map((m) => ({ ...m })) })) })),
  };
  framedValuesAsBuffers(copy);
  return copy;
}

/** kafkajs's own bytes for the request (FramedJson values as their Buffers), with its clock read as NOW. */
async function kafkajsBytes(args: ProduceArgs): Promise<Buffer> {
  const spy = jest.spyOn(Date, 'now').mockReturnValue(NOW);
  try {
    return (await kafkajsProduceV3(withBufferValues(args)).encode()).buffer;
  } finally {
    spy.mockRestore();
  }
}

const text = fc.string({ unit: 'grapheme', maxLength: 40 });
const bytes = fc.uint8Array({ maxLength: 3_000 }).map((a) => Buffer.from(a));
const keyOrValue = fc.oneof(fc.constant(null), text, bytes);
// What the bus produces: a schema id, then JSON text (multi-byte characters included).
const framed = fc
  .tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.string({ unit: 'grapheme', maxLength: 3_000 }))
  .map(([schemaId, json]) => new FramedJson(schemaId, json) as unknown as string);
const headerValue = fc.oneof(text, bytes);
const message: fc.Arbitrary<Message> = fc.record(
  {
    key: keyOrValue,
    value: fc.oneof(keyOrValue, framed),
    headers: fc.dictionary(text, fc.oneof(headerValue, fc.array(headerValue, { maxLength: 3 })), { maxKeys: 3 }),
  },
  { requiredKeys: ['value'] },
);
const produceArgs: fc.Arbitrary<ProduceArgs> = fc.record({
  acks: fc.constantFrom(-1, 0, 1),
  timeout: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  transactionalId: fc.oneof(fc.constant(null), text),
  // As kafkajs's idempotent producer passes it (the broker's decimal string), or as a Long or number.
  producerId: fc
    .bigInt({ min: -1n, max: 2n ** 63n - 1n })
    .chain((v) => fc.constantFrom<ProduceArgs['producerId']>(v.toString(), Long.fromValue(v), Number(BigInt.asIntN(32, v)))),
  producerEpoch: fc.integer({ min: 0, max: 32_767 }),
  compression: fc.constant(0),
  topicData: fc.array(
    fc.record({
      topic: fc.string({ minLength: 1, maxLength: 30 }),
      partitions: fc.array(
        fc.record({
          partition: fc.integer({ min: 0, max: 1_000 }),
          firstSequence: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
          // Up to 200 records: offset deltas past 63 take two varint bytes.
          messages: fc.array(message, { maxLength: 200 }),
        }),
        { maxLength: 4 },
      ),
    }),
    { minLength: 1, maxLength: 3 },
  ),
});

describe('produce requests written once', () => {
  it('writes every request byte for byte as kafkajs does', async () => {
    await fc.assert(
      fc.asyncProperty(produceArgs, async (args) => {
        const ours = encodeProducePayload(args, NOW);
        expect(ours).toBeDefined();
        expect(ours?.buffer.equals(await kafkajsBytes(args))).toBe(true);
        expect(ours?.size()).toBe(ours?.buffer.length);
      }),
      { seed: 18, numRuns: 300 },
    );
  });

  it('with kafkajs defaults: no transactional id, producer id or sequence', async () => {
    const args: ProduceArgs = {
      acks: -1,
      timeout: 5_000,
      topicData: [{ topic: 'events.raw', partitions: [{ partition: 3, messages: [{ key: 'k', value: Buffer.from('{}') }] }] }],
    };
    expect(encodeProducePayload(args, NOW)?.buffer.equals(await kafkajsBytes(args))).toBe(true);
  });

  it('with many and large records: offset deltas and lengths of several varint bytes', async () => {
    const messages: Message[] = Array.from({ length: 300 }, (_, i) => ({
      key: `visitor-${i}`,
      value: Buffer.alloc(i % 3 === 0 ? 20_000 : 1_100, i),
      headers: { source: 'ingest-gateway', attempt: [Buffer.from([i & 0xff]), 'é'] },
    }));
    const args: ProduceArgs = {
      acks: -1,
      timeout: 5_000,
      producerId: '4000000123',
      producerEpoch: 2,
      topicData: [{ topic: 'events.raw', partitions: [{ partition: 1, firstSequence: 700, messages }] }],
    };
    expect(encodeProducePayload(args, NOW)?.buffer.equals(await kafkajsBytes(args))).toBe(true);
  });

  it.each<[string, Partial<ProduceArgs> | Message]>([
    ['compression', { compression: 1 }],
    ['a record with its own timestamp', { value: 'v', timestamp: '1764000000000' }],
    ['a number as a value', { value: 7 as unknown as string }],
    ['a header without a value', { value: 'v', headers: { h: undefined } }],
  ])('leaves %s to kafkajs', (_, part) => {
    const base: ProduceArgs = { acks: -1, timeout: 5_000, topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [] }] }] };
    const args: ProduceArgs =
      'value' in part ? { ...base, topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [part] }] }] } : { ...base, ...part };
    expect(encodeProducePayload(args, NOW)).toBeUndefined();
  });

  it('writes a FramedJson value as the Buffer it stands for: header, then the JSON as UTF-8', () => {
    const value = new FramedJson(0x01020304, '{"name":"Zoë 🚀"}');
    expect(value.byteLength).toBe(5 + Buffer.byteLength('{"name":"Zoë 🚀"}'));
    expect(value.toBuffer()).toEqual(Buffer.concat([Buffer.from([0, 1, 2, 3, 4]), Buffer.from('{"name":"Zoë 🚀"}')]));
    const payload = (framedValue: FramedJson | Buffer) =>
      encodeProducePayload(
        { acks: -1, timeout: 5_000, topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [{ key: 'k', value: framedValue as unknown as string }] }] }] },
        NOW,
      )?.buffer;
    expect(payload(value)).toEqual(payload(value.toBuffer()));
  });

  it('hands kafkajs Buffers for FramedJson values when its own encoder writes the request (compression)', async () => {
    installProduceEncoder();
    const value = new FramedJson(7, '{"a":1}');
    const message = { key: 'k', value: value as unknown as string };
    const args: ProduceArgs = { acks: -1, timeout: 5_000, compression: 1, topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [message] }] }] };
    const { request } = produceRequests.protocol({ version: 3 })(args);
    await request.encode();
    expect(message.value).toEqual(value.toBuffer());
  });

  it('is what kafkajs uses for produce requests v3 to v7 once installed', async () => {
    installProduceEncoder();
    installProduceEncoder(); // idempotent: wrapped once
    const args: ProduceArgs = {
      acks: -1,
      timeout: 5_000,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [{ key: 'k', value: Buffer.from('x') }] }] }],
    };
    for (const version of [3, 4, 5, 6, 7]) {
      const { request } = produceRequests.protocol({ version })(args);
      expect(request.apiVersion).toBe(version);
      const spy = jest.spyOn(Date, 'now').mockReturnValue(NOW);
      try {
        const encoded = await request.encode();
        // Ours is a plain object; kafkajs's own is an Encoder.
        expect(encoded.constructor).toBe(Object);
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's own request of this version
        const own = require(`kafkajs/src/protocol/requests/produce/v${version}/request`) as typeof kafkajsProduceV3;
        expect(encoded.buffer.equals((await own(args).encode()).buffer)).toBe(true);
      } finally {
        spy.mockRestore();
      }
    }
  });
});

describe('crc32c', () => {
  it('agrees with kafkajs on every length and alignment', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 5_000 }), fc.nat(16), (array, skip) => {
        const buf = Buffer.from(array);
        const start = Math.min(skip, buf.length);
        expect(crc32c(buf, start)).toBe(kafkajsCrc32c(buf.subarray(start)));
      }),
      { seed: 18, numRuns: 500 },
    );
  });

  it('gives the standard check value', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });
});
