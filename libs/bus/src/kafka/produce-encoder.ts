import type { IHeaders, Message } from 'kafkajs';
import { crc32c } from './crc32c';
import { FramedJson } from './framed-json';

/**
 * Produce requests written once. kafkajs encodes a produce request by
 * encoding every record into a buffer of its own (zero-filled, grown by
 * doubling), copying the records into the batch, the batch into its
 * partition, the partition into its topic and the topic into the request,
 * and checksums each batch a byte at a time: about seven copies of every
 * event, most of a producer's CPU. This writes the same bytes into one buffer
 * sized beforehand, with a checksum eight bytes at a time.
 *
 * It replaces only the `encode` of kafkajs's produce request, versions 3 to 7
 * (one wire format: v4 to v7 only announce what the broker may answer), and
 * only for what it writes byte for byte as kafkajs does (produce-encoder.test.ts
 * proves that on generated requests): records without compression and without
 * a timestamp of their own, keys and values as strings, buffers or null, and
 * values as FramedJson (written in place, as kafkajs would write its Buffer).
 * Any other request goes to kafkajs's own encoder, its FramedJson values made
 * Buffers first. kafkajs is pinned to the version whose internals this reaches into.
 */

/** kafkajs's 64-bit integer (src/utils/long). */
interface KafkaLong {
  getHighBits(): number;
  getLowBits(): number;
}

/** What kafkajs hands a produce request (src/protocol/requests/produce/v3/request). */
export interface ProduceArgs {
  acks: number;
  timeout: number;
  transactionalId?: string | null;
  /** kafkajs's idempotent producer passes the id as the broker's decimal string; a Long or number works too. */
  producerId?: KafkaLong | string | number;
  producerEpoch?: number;
  compression?: number;
  topicData: readonly {
    topic: string;
    partitions: readonly { partition: number; firstSequence?: number; messages: readonly Message[] }[];
  }[];
}

/** The part of kafkajs's Encoder the request frame reads (`writeEncoder`). */
export interface EncodedPayload {
  buf: Buffer;
  offset: number;
  readonly buffer: Buffer;
  size(): number;
}

type Produce = (args: ProduceArgs) => { request: { encode: () => Promise<unknown> }; response: unknown };
interface ProduceRequests {
  protocol: (o: { version: number }) => Produce | undefined;
}
interface LongModule {
  fromValue(value: unknown): KafkaLong;
  fromInt(value: number): KafkaLong;
}

/* eslint-disable @typescript-eslint/no-require-imports -- kafkajs's internals have no public entry point */
const produceRequests = require('kafkajs/src/protocol/requests/produce') as ProduceRequests;
const Long = require('kafkajs/src/utils/long') as LongModule;
/* eslint-enable @typescript-eslint/no-require-imports */

const NO_PRODUCER = Long.fromInt(-1);
const INSTALLED = Symbol.for('svc.bus.fastProduceEncoder');

/** Makes every kafkajs client in this process write its produce requests with encodeProducePayload. Idempotent. */
export function installProduceEncoder(): void {
  const target = produceRequests as ProduceRequests & { [INSTALLED]?: true };
  if (target[INSTALLED]) return;
  const original = target.protocol;
  target.protocol = ({ version }) => {
    const produce = original({ version });
    if (!produce || version < 3 || version > 7) return produce;
    return (args) => {
      const made = produce(args);
      const ownEncode = made.request.encode;
      made.request.encode = () => {
        const payload = encodeProducePayload(args, Date.now());
        if (payload) return Promise.resolve(payload);
        framedValuesAsBuffers(args);
        return ownEncode();
      };
      return made;
    };
  };
  target[INSTALLED] = true;
}

/** Makes every FramedJson value of the request a Buffer, for kafkajs's own encoder (which the args it encodes share). */
export function framedValuesAsBuffers(args: ProduceArgs): void {
  for (const topic of args.topicData) {
    for (const partition of topic.partitions) {
      for (const m of partition.messages) {
        const value: unknown = m.value;
        if (value instanceof FramedJson) (m as { value: Buffer }).value = value.toBuffer();
      }
    }
  }
}

// Fixed sizes of the request's parts (Kafka's produce request v3, record batch v2).
const PARTITION_HEADER = 4 + 4; // partition, record set size
const BATCH_HEADER = 8 + 4 + 4 + 1 + 4; // first offset, length, leader epoch, magic, CRC
const BATCH_BODY_HEADER = 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4; // attributes .. first sequence, record count
const MAGIC = 2;
const TRANSACTIONAL = 16;

/**
 * The produce request's payload (after the request header), or undefined when
 * the request holds something only kafkajs's own encoder writes.
 */
export function encodeProducePayload(args: ProduceArgs, now: number): EncodedPayload | undefined {
  if ((args.compression ?? 0) !== 0) return undefined;
  const transactionalId = args.transactionalId ?? null;
  // Pass 1: sizes (and whether every record is of a kind written here). Each record's body size
  // is kept, in request order, for pass 2 to write as the record's length.
  const bodySizes: number[] = [];
  let size = stringSize(transactionalId) + 2 + 4 + 4;
  for (const topic of args.topicData) {
    size += stringSize(topic.topic) + 4;
    for (const partition of topic.partitions) {
      size += PARTITION_HEADER + BATCH_HEADER + BATCH_BODY_HEADER;
      const { messages } = partition;
      for (let i = 0; i < messages.length; i++) {
        const body = recordBodySize(messages[i] as Message, i);
        if (body < 0) return undefined;
        bodySizes.push(body);
        size += varIntSize(body) + body;
      }
    }
  }

  // Pass 2: the bytes.
  const buf = Buffer.allocUnsafe(size);
  let at = writeString(buf, 0, transactionalId);
  at = buf.writeInt16BE(args.acks, at);
  at = buf.writeInt32BE(args.timeout, at);
  at = buf.writeInt32BE(args.topicData.length, at);
  const producerId = args.producerId ?? NO_PRODUCER;
  const attributes = transactionalId ? TRANSACTIONAL : 0; // as kafkajs: an empty id is not transactional
  let record = 0;
  for (const topic of args.topicData) {
    at = writeString(buf, at, topic.topic);
    at = buf.writeInt32BE(topic.partitions.length, at);
    for (const partition of topic.partitions) {
      const { messages } = partition;
      at = buf.writeInt32BE(partition.partition, at);
      const recordSetSizeAt = at;
      at += 4;
      const recordSetStart = at;
      at = writeInt64(buf, at, 0); // first offset
      const batchLengthAt = at;
      at += 4;
      const batchStart = at;
      at = buf.writeInt32BE(0, at); // partition leader epoch
      at = buf.writeInt8(MAGIC, at);
      const crcAt = at;
      at += 4;
      const crcStart = at;
      at = buf.writeInt16BE(attributes, at);
      at = buf.writeInt32BE(messages.length - 1, at); // last offset delta
      at = writeInt64(buf, at, now); // first timestamp
      at = writeInt64(buf, at, now); // max timestamp
      at = writeLong(buf, at, producerId);
      at = buf.writeInt16BE(args.producerEpoch ?? 0, at);
      at = buf.writeInt32BE(partition.firstSequence ?? 0, at);
      at = buf.writeInt32BE(messages.length, at);
      for (let i = 0; i < messages.length; i++) at = writeRecord(buf, at, messages[i] as Message, i, bodySizes[record++] as number);
      buf.writeUInt32BE(crc32c(buf, crcStart, at), crcAt);
      buf.writeInt32BE(at - batchStart, batchLengthAt);
      buf.writeInt32BE(at - recordSetStart, recordSetSizeAt);
    }
  }
  if (at !== size) throw new Error(`produce encoder: wrote ${at} bytes of ${size}`);
  return { buf, offset: size, buffer: buf, size: () => size };
}

/** A record's body size (after its length), or -1 when kafkajs's own encoder must write it. */
function recordBodySize(m: Message, offsetDelta: number): number {
  if (m.timestamp != null) return -1;
  const key = bytesSize(m.key);
  const value = bytesSize(m.value);
  if (key < 0 || value < 0) return -1;
  // attributes, timestamp delta (always 0: one byte), offset delta, key, value
  const size = 1 + 1 + varIntSize(offsetDelta) + key + value;
  let count = 0;
  let headers = 0;
  if (m.headers) {
    for (const name of Object.keys(m.headers)) {
      const values = m.headers[name];
      for (const v of Array.isArray(values) ? values : [values]) {
        if (typeof v !== 'string' && !Buffer.isBuffer(v)) return -1;
        const nameBytes = Buffer.byteLength(name);
        headers += varIntSize(nameBytes) + nameBytes + bytesSize(v);
        count++;
      }
    }
  }
  return size + varIntSize(count) + headers;
}

function writeRecord(buf: Buffer, at: number, m: Message, offsetDelta: number, bodySize: number): number {
  at = writeVarInt(buf, at, bodySize);
  buf[at++] = 0; // attributes
  buf[at++] = 0; // timestamp delta
  at = writeVarInt(buf, at, offsetDelta);
  at = writeBytes(buf, at, m.key);
  at = writeBytes(buf, at, m.value);
  const headers: IHeaders = m.headers ?? {};
  let count = 0;
  for (const name of Object.keys(headers)) {
    const values = headers[name];
    count += Array.isArray(values) ? values.length : 1;
  }
  at = writeVarInt(buf, at, count);
  for (const name of Object.keys(headers)) {
    const values = headers[name];
    for (const v of Array.isArray(values) ? values : [values]) {
      at = writeVarInt(buf, at, Buffer.byteLength(name));
      at += buf.write(name, at, 'utf8');
      at = writeBytes(buf, at, v as string | Buffer);
    }
  }
  return at;
}

/** A varint-length-prefixed string or buffer's size; -1 for a kind kafkajs cannot size either. */
function bytesSize(v: unknown): number {
  if (v === null || v === undefined) return 1; // length -1
  if (Buffer.isBuffer(v)) return varIntSize(v.length) + v.length;
  if (v instanceof FramedJson) return varIntSize(v.byteLength) + v.byteLength;
  if (typeof v === 'string') {
    const n = Buffer.byteLength(v);
    return varIntSize(n) + n;
  }
  return -1;
}

function writeBytes(buf: Buffer, at: number, v: Buffer | FramedJson | string | null | undefined): number {
  if (v === null || v === undefined) return writeVarInt(buf, at, -1);
  if (Buffer.isBuffer(v)) {
    at = writeVarInt(buf, at, v.length);
    return at + v.copy(buf, at);
  }
  if (v instanceof FramedJson) return v.writeInto(buf, writeVarInt(buf, at, v.byteLength));
  at = writeVarInt(buf, at, Buffer.byteLength(v));
  return at + buf.write(v, at, 'utf8');
}

function stringSize(s: string | null): number {
  return s === null ? 2 : 2 + Buffer.byteLength(s);
}

function writeString(buf: Buffer, at: number, s: string | null): number {
  if (s === null) return buf.writeInt16BE(-1, at);
  at = buf.writeInt16BE(Buffer.byteLength(s), at);
  return at + buf.write(s, at, 'utf8');
}

function writeLong(buf: Buffer, at: number, value: KafkaLong | string | number): number {
  const v = Long.fromValue(value); // as kafkajs's Encoder.writeInt64 reads it
  at = buf.writeInt32BE(v.getHighBits(), at);
  return buf.writeInt32BE(v.getLowBits(), at);
}

function writeInt64(buf: Buffer, at: number, v: number): number {
  return buf.writeBigInt64BE(BigInt(v), at);
}

/** Zigzag varint (Kafka's signed varint) of a 32-bit integer. */
function varIntSize(v: number): number {
  let u = ((v << 1) ^ (v >> 31)) >>> 0;
  let n = 1;
  while (u >= 0x80) {
    u >>>= 7;
    n++;
  }
  return n;
}

function writeVarInt(buf: Buffer, at: number, v: number): number {
  let u = ((v << 1) ^ (v >> 31)) >>> 0;
  while (u >= 0x80) {
    buf[at++] = (u & 0x7f) | 0x80;
    u >>>= 7;
  }
  buf[at++] = u;
  return at;
}
