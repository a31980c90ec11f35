import { describe, expect, it } from '@jest/globals';
import { JsonDeserializer, JsonSerializer, MockClient, SerdeType } from '@confluentinc/schemaregistry';
import { Type } from '@sinclair/typebox';
import { fullFormats } from 'ajv-formats/dist/formats';
import { Topics, type TopicSpec } from '@svc/contracts';
import { deadLetterTopicFor } from '../dead-letters';
import { Codec, decodeRaw, headersToRecord, isRawTopic, valueSubject } from './codec';
import { FramedJson } from './framed-json';

const Writer = Type.Object(
  { id: Type.String(), seq: Type.Integer({ minimum: 0 }), at: Type.Optional(Type.String({ format: 'date-time' })) },
  { additionalProperties: false },
);
const topic: TopicSpec = { name: 'unit.codec', partitions: 1, schema: Writer };

/**
 * `own`: the writer registered the reader's schema (read without the serde).
 * `foreign`: another writer schema that accepts the same values (read by the registry's serde).
 */
type Writers = 'own' | 'foreign';
const writerSchema = (writer: Writers) => (writer === 'own' ? Writer : { ...Writer, $comment: 'another writer' });

async function setup(writer: Writers = 'own') {
  const registry = new MockClient({ baseURLs: ['mock://'] });
  const schemaId = await registry.register(valueSubject(topic.name), { schemaType: 'JSON', schema: JSON.stringify(writerSchema(writer)) });
  return { registry, schemaId, codec: new Codec(registry) };
}

const framed = (id: number, json: string) => {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(id, 1);
  return Buffer.concat([header, Buffer.from(json)]);
};

/** The bytes an encoded value stands for, as they go on the wire. */
const bytesOf = (encoded: FramedJson | Buffer): Buffer => (encoded instanceof FramedJson ? encoded.toBuffer() : encoded);

describe('Codec', () => {
  it('writes the Confluent frame (magic byte, schema id) before the JSON, and reads it back', async () => {
    const { codec, schemaId } = await setup();
    const value = { id: 'a', seq: 1, at: '2026-01-01T00:00:00Z' };
    const bytes = bytesOf(codec.encode(schemaId, value));
    expect(bytes[0]).toBe(0);
    expect(bytes.readUInt32BE(1)).toBe(schemaId);
    expect(JSON.parse(bytes.subarray(5).toString())).toEqual(value);
    expect(await codec.decode(topic, bytes)).toEqual({ ok: true, value });
  });

  it("writes byte for byte what the registry's own serializer writes, and the stock deserializer reads it", async () => {
    const { codec, registry, schemaId } = await setup();
    const value = { id: 'é \u0000 "q"', seq: 7, at: '2026-01-01T00:00:00Z' };
    const serializer = new JsonSerializer(registry, SerdeType.VALUE, {
      useSchemaId: schemaId,
      autoRegisterSchemas: false,
      validate: true,
      formats: fullFormats,
    });
    const ours = bytesOf(codec.encode(schemaId, value));
    expect(ours.equals(await serializer.serialize(topic.name, value))).toBe(true);
    const stock = new JsonDeserializer(registry, SerdeType.VALUE, { validate: true, formats: fullFormats });
    expect(await stock.deserialize(topic.name, ours)).toEqual(value);
  });

  it('encodes and decodes many messages at once (each schema compiled by the first decode alone)', async () => {
    const { codec, schemaId } = await setup();
    const values = Array.from({ length: 50 }, (_, seq) => ({ id: `m${seq}`, seq }));
    const bytes = values.map((v) => bytesOf(codec.encode(schemaId, v)));
    const decoded = await Promise.all(bytes.map((b) => codec.decode(topic, b)));
    expect(decoded).toEqual(values.map((value) => ({ ok: true, value })));
  });

  it('refuses plain JSON, saying what it would have been', async () => {
    const { codec } = await setup();
    const result = await codec.decode(topic, Buffer.from(JSON.stringify({ id: 'a', seq: -1 })));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.reason).toMatch(/not in the Confluent wire format \(starts with 0x7b/);
      expect(result.reason).toMatch(/as plain JSON it also violates the schema: \/seq must be >= 0/);
    }
    const fine = await codec.decode(topic, Buffer.from(JSON.stringify({ id: 'a', seq: 1 })));
    expect(fine.ok ? '' : fine.reason).toMatch(/plain JSON that matches the schema/);
  });

  it('reads frames written with its own schema without the serde: one registry look-up for any number of messages', async () => {
    const { codec, registry, schemaId } = await setup('own');
    let lookUps = 0;
    const getBySubjectAndId = registry.getBySubjectAndId.bind(registry);
    registry.getBySubjectAndId = (...args) => {
      lookUps++;
      return getBySubjectAndId(...args);
    };
    const values = Array.from({ length: 20 }, (_, seq) => ({ id: `m${seq}`, seq }));
    for (const value of values) expect(await codec.decode(topic, bytesOf(codec.encode(schemaId, value)))).toEqual({ ok: true, value });
    expect(lookUps).toBe(1);
  });

  it.each(
    (['own', 'foreign'] as const).flatMap((writer) =>
      [
        ['no value', null, /has no value/],
        ['an unknown schema id', framed(4242, '{"id":"a","seq":1}'), /schema id 4242, which the registry does not know/],
        ['a payload that breaks its registered schema', 'bad-seq', /violates its registered schema \(id \d+\): \/seq must be >= 0/],
        ['a bad format', 'bad-at', /violates its registered schema \(id \d+\): \/at must match format "date-time"/],
        ['text that is not JSON', 'not-json', /is not JSON after its schema id/],
      ].map(([what, input, reason]) => [writer, what, input, reason] as [Writers, string, Buffer | string | null, RegExp]),
    ),
  )('with the %s writer schema, parks %s with the reason', async (writer, _, input, reason) => {
    const { codec, schemaId } = await setup(writer);
    const bytes =
      input === 'bad-seq'
        ? framed(schemaId, '{"id":"a","seq":-1}')
        : input === 'bad-at'
          ? framed(schemaId, '{"id":"a","seq":1,"at":"yesterday"}')
          : input === 'not-json'
            ? framed(schemaId, '{nope')
            : (input as Buffer | null);
    const result = await codec.decode(topic, bytes);
    expect(result.ok ? '' : result.reason).toMatch(reason);
  });

  it("checks the reader's own schema after the writer's", async () => {
    const { codec, schemaId } = await setup();
    const reader: TopicSpec = { ...topic, schema: Type.Object({ id: Type.String(), seq: Type.Integer({ maximum: 5 }) }) };
    const result = await codec.decode(reader, framed(schemaId, '{"id":"a","seq":9}'));
    expect(result.ok ? '' : result.reason).toBe('message for topic unit.codec violates its schema: /seq must be <= 5');
  });

  it('throws (the batch is retried) when the registry cannot be reached, instead of parking the message', async () => {
    const { registry, schemaId } = await setup();
    const down = Object.assign(Object.create(registry) as MockClient, {
      getBySubjectAndId: () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    });
    await expect(new Codec(down).decode(topic, framed(schemaId, '{"id":"a","seq":1}'))).rejects.toThrow(/ECONNREFUSED/);
  });

  it('reads dead-letter topics as raw bytes: JSON with or without the frame, else the bytes', async () => {
    const { codec } = await setup();
    const dlq = deadLetterTopicFor(topic);
    expect(isRawTopic(dlq.name)).toBe(true);
    expect(isRawTopic(topic.name)).toBe(false);
    expect(await codec.decode(dlq, framed(7, '{"a":1}'))).toEqual({ ok: true, value: { a: 1 } });
    expect(await codec.decode(dlq, Buffer.from('[1,2]'))).toEqual({ ok: true, value: [1, 2] });
    expect(decodeRaw(Buffer.from([0xff, 0x01]))).toEqual(Buffer.from([0xff, 0x01]));
    expect(bytesOf(codec.encode(undefined, { a: 1 }))).toEqual(Buffer.from('{"a":1}'));
  });

  const realSchemas = Object.values(Topics).flatMap((t) => (['own', 'foreign'] as const).map((writer) => [t.name, writer, t] as const));
  it.each(realSchemas)('checks the real schema of %s written with the %s schema', async (_, writer, spec) => {
    const registry = new MockClient({ baseURLs: ['mock://'] });
    const schema = writer === 'own' ? spec.schema : { ...spec.schema, $comment: 'another writer' };
    const id = await registry.register(valueSubject(spec.name), { schemaType: 'JSON', schema: JSON.stringify(schema) });
    // An empty object fails validation: proof that the schema compiled (formats included) rather than threw.
    const result = await new Codec(registry).decode(spec, framed(id, '{}'));
    expect(result.ok ? '' : result.reason).toMatch(new RegExp(`violates its registered schema \\(id ${id}\\): / must have required property`));
  });

  it('turns Kafka headers into strings, keeping the last of a repeated one', () => {
    expect(headersToRecord({ a: Buffer.from('x'), b: 'y', c: [Buffer.from('1'), '2'], d: undefined })).toEqual({ a: 'x', b: 'y', c: '2' });
  });
});
