import {
  JsonDeserializer,
  RestError,
  SerdeType,
  SerializationError,
  SubjectNameStrategyType,
  type JsonDeserializerConfig,
  type Client,
} from '@confluentinc/schemaregistry';
import type { IHeaders } from 'kafkajs';
import { isDeepStrictEqual } from 'node:util';
import { deadLetterTopicName, firstSchemaError, schemaFormats, type TopicSpec } from '@svc/contracts';
import { SchemaViolationError } from '../errors';
import { FRAME_HEADER_BYTES, FRAME_MAGIC, FramedJson } from './framed-json';
import { isUnavailable } from './unavailable';

/** What the consumer makes of a stored value: the payload, or why it cannot be delivered. */
export type Decoded = { ok: true; value: unknown } | { ok: false; reason: string };

/**
 * Dead-letter topics hold raw bytes, no schema (what lands there did not
 * match one). They are told apart by name, as deadLetterTopicName makes them.
 */
export const isRawTopic = (name: string): boolean => name.endsWith(deadLetterTopicName(''));

/** The subject the registry's TopicNameStrategy (what stock Confluent serdes use) reads a value schema from. */
export const valueSubject = (topic: string): string => `${topic}-value`;

/** Confluent wire format: magic byte 0, 4-byte big-endian schema id, then (for JSON Schema) the JSON text. */
const isFramed = (raw: Buffer) => raw.length >= FRAME_HEADER_BYTES && raw[0] === FRAME_MAGIC;

/**
 * The registry serde's settings (for reading). Subjects by TopicNameStrategy (`<topic>-value`,
 * where ensureTopics registers): the library's default, "associated" subjects,
 * asks the registry per topic and falls back to the same name. Ajv validates
 * with the same formats as the contracts' validator (schemaFormats)
 * and is lenient about keywords and formats it does not know, so a foreign
 * writer schema cannot make decoding throw.
 */
const serdeConfig: JsonDeserializerConfig = {
  subjectNameStrategyType: SubjectNameStrategyType.TOPIC,
  validate: true,
  strict: false,
  logger: false,
  formats: schemaFormats,
};

/**
 * Values to and from the registry's wire format. Writing frames the JSON with
 * the schema id our ensureTopics registered (never an inferred schema) and
 * does nothing else: the bus has validated every value against its topic's
 * schema before it gets here, and the registry's JsonSerializer would only
 * validate it again (and key its caches with a deterministic JSON of the
 * schema) per message. Reading checks the payload against the schema it was
 * written with (the registry's) and then against the subscriber's own
 * TopicSpec, so a handler only ever sees values of its declared type. When
 * the writer's schema is the reader's own (the usual case: both sides built
 * from libs/contracts), one check does for both, and the frame is parsed
 * here; any other writer schema goes through the registry's JSON Schema
 * serde, which compiles it.
 */
export class Codec {
  private readonly deserializer: JsonDeserializer;
  /**
   * The serde compiles a schema's validator on first use, and every call
   * that starts before the first has finished compiles it again (~100 ms
   * each for a real schema): the first use of each schema id goes alone.
   */
  private readonly warmed = new Map<string, Promise<void>>();
  /** Per topic and schema id: is the writer's schema the reader's own? Failed look-ups are not kept. */
  private readonly writerIsReader = new Map<string, Promise<boolean>>();

  constructor(private readonly registry: Client) {
    this.deserializer = new JsonDeserializer(registry, SerdeType.VALUE, serdeConfig);
  }

  /**
   * A value already checked against its topic's schema, as the produce
   * encoder writes it: framed (a FramedJson, written in place) or, with
   * `schemaId` undefined (dead-letter topics), plain JSON.
   */
  encode(schemaId: number | undefined, value: unknown): FramedJson | Buffer {
    const json = JSON.stringify(value ?? null);
    return schemaId === undefined ? Buffer.from(json) : new FramedJson(schemaId, json);
  }

  private async firstAlone<T>(key: string, work: () => Promise<T>): Promise<T> {
    const warm = this.warmed.get(key);
    if (warm) {
      await warm;
      return work();
    }
    const first = work();
    this.warmed.set(
      key,
      first.then(
        () => undefined,
        () => {
          this.warmed.delete(key);
        },
      ),
    );
    return first;
  }

  /**
   * Throws only when the registry cannot be reached (the batch is retried
   * later); anything wrong with the message itself is a `{ ok: false }`.
   */
  async decode(spec: TopicSpec, raw: Buffer | null): Promise<Decoded> {
    return isRawTopic(spec.name) ? readersCheck(spec, decodeRaw(raw)) : this.decodeFramed(spec, raw);
  }

  private async decodeFramed(spec: TopicSpec, raw: Buffer | null): Promise<Decoded> {
    const topic = spec.name;
    if (!raw || raw.length === 0) return bad(`message for topic ${topic} has no value`);
    if (!isFramed(raw)) return bad(notFramed(spec, raw));
    const schemaId = raw.readUInt32BE(1);
    try {
      if (await this.isReadersSchema(spec, schemaId)) return parseOwn(spec, schemaId, raw);
      const value = await this.firstAlone(`r${schemaId}`, () => this.deserializer.deserialize(topic, raw) as Promise<unknown>);
      return readersCheck(spec, value);
    } catch (err) {
      if (err instanceof RestError && err.status === 404) {
        return bad(`message for topic ${topic} names schema id ${schemaId}, which the registry does not know`);
      }
      // The registry down, or refusing us (auth, 4xx): not the message's fault, so retry rather than park it.
      if (isUnavailable(err) || err instanceof RestError) throw err;
      if (err instanceof SerializationError) return bad(`message for topic ${topic} ${describeSerdeFailure(err, schemaId)}`);
      if (err instanceof SyntaxError) return bad(`message for topic ${topic} is not JSON after its schema id ${schemaId}: ${err.message}`);
      return bad(`message for topic ${topic} cannot be decoded with schema id ${schemaId}: ${(err as Error).message}`);
    }
  }

  private isReadersSchema(spec: TopicSpec, schemaId: number): Promise<boolean> {
    const key = `${spec.name}\n${schemaId}`;
    let answer = this.writerIsReader.get(key);
    if (!answer) {
      const asking = this.registry
        .getBySubjectAndId(valueSubject(spec.name), schemaId, 'JSON')
        // As JSON on both sides: TypeBox schemas carry symbol keys, and the registry may reorder or reformat the text.
        .then((info) => isDeepStrictEqual(JSON.parse(info.schema) as unknown, JSON.parse(JSON.stringify(spec.schema)) as unknown));
      asking.catch(() => {
        if (this.writerIsReader.get(key) === asking) this.writerIsReader.delete(key);
      });
      this.writerIsReader.set(key, asking);
      answer = asking;
    }
    return answer;
  }
}

/** A frame written with the reader's own schema: parsed, and checked once against it (reported as the serde would). */
function parseOwn(spec: TopicSpec, schemaId: number, raw: Buffer): Decoded {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8', FRAME_HEADER_BYTES));
  } catch (err) {
    return bad(`message for topic ${spec.name} is not JSON after its schema id ${schemaId}: ${(err as Error).message}`);
  }
  const problem = firstSchemaError(spec.schema, value);
  return problem === undefined ? { ok: true, value } : bad(`message for topic ${spec.name} violates its registered schema (id ${schemaId}): ${problem}`);
}

const bad = (reason: string): Decoded => ({ ok: false, reason });

/** The reader's own check of a value its writer's schema allowed. */
function readersCheck(spec: TopicSpec, value: unknown): Decoded {
  const problem = firstSchemaError(spec.schema, value);
  return problem === undefined ? { ok: true, value } : bad(new SchemaViolationError(spec.name, problem).message);
}

/** A dead-letter topic's value: JSON when it is JSON (with or without the Confluent frame), else the bytes. */
export function decodeRaw(raw: Buffer | null): unknown {
  if (!raw) return null;
  const text = isFramed(raw) ? raw.subarray(FRAME_HEADER_BYTES) : raw;
  try {
    return JSON.parse(text.toString('utf8')) as unknown;
  } catch {
    return raw;
  }
}

/** Why a value without the Confluent frame was refused, and, if it is plain JSON, what it would have been. */
function notFramed(spec: TopicSpec, raw: Buffer): string {
  const first = `0x${(raw[0] ?? 0).toString(16).padStart(2, '0')}`;
  let reason = `message for topic ${spec.name} is not in the Confluent wire format (starts with ${first}, not the magic byte 0x00)`;
  let plain: unknown;
  try {
    plain = JSON.parse(raw.toString('utf8'));
  } catch {
    return reason;
  }
  const problem = firstSchemaError(spec.schema, plain);
  reason += problem === undefined ? '; it is plain JSON that matches the schema' : `; as plain JSON it also violates the schema: ${problem}`;
  return reason;
}

/** "Invalid message: [ajv errors]" from the serde, as `violates its registered schema (id N): /path message`. */
function describeSerdeFailure(err: SerializationError, schemaId: number): string {
  const json = err.message.replace(/^Invalid message:\s*/, '');
  try {
    const [first] = JSON.parse(json) as Array<{ instancePath?: string; message?: string }>;
    if (first) return `violates its registered schema (id ${schemaId}): ${first.instancePath || '/'} ${first.message ?? 'is invalid'}`;
  } catch {
    // not the validation failure's format: fall through
  }
  return `cannot be decoded with schema id ${schemaId}: ${err.message}`;
}

/** Kafka headers as the port's string record (a repeated header keeps its last value). */
export function headersToRecord(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const last = Array.isArray(value) ? value[value.length - 1] : value;
    if (last !== undefined) out[name] = Buffer.isBuffer(last) ? last.toString('utf8') : String(last);
  }
  return out;
}
