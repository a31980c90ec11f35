import { firstSchemaError, type TopicSpec } from '@svc/contracts';
import { SchemaViolationError } from './errors';

/** Throws a SchemaViolationError naming the topic and the first failing field. */
export function assertValid(topic: TopicSpec, value: unknown): void {
  const problem = firstSchemaError(topic.schema, value);
  if (problem !== undefined) throw new SchemaViolationError(topic.name, problem);
}

/** Like assertValid for a whole produce call; the error also says which message failed. */
export function assertAllValid(topic: TopicSpec, values: readonly unknown[]): void {
  values.forEach((value, i) => {
    const problem = firstSchemaError(topic.schema, value);
    if (problem === undefined) return;
    const which = values.length > 1 ? ` (message ${i + 1} of ${values.length})` : '';
    throw new SchemaViolationError(topic.name, problem + which);
  });
}

/**
 * Kafka's murmur2 (org.apache.kafka.common.utils.Utils#murmur2) over the
 * UTF-8 bytes of the key, as a signed 32-bit integer. Both adapters must
 * agree with Kafka's default partitioner, so a key lands in the same
 * partition whichever tier stores it.
 */
export function murmur2(key: string | Buffer): number {
  const data = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  const m = 0x5bd1e995;
  const length = data.length;
  let h = (0x9747b28c ^ length) | 0;
  const tail = length - (length % 4);
  for (let i = 0; i < tail; i += 4) {
    let k = data.readInt32LE(i);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  // Java's switch falls through 3 → 2 → 1; spelled out as ifs here.
  const rest = length % 4;
  if (rest === 3) h ^= data.readUInt8(tail + 2) << 16;
  if (rest >= 2) h ^= data.readUInt8(tail + 1) << 8;
  if (rest >= 1) h = Math.imul(h ^ data.readUInt8(tail), m);
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** Kafka's Utils.toPositive: drops the sign bit (not Math.abs, which overflows on MIN_VALUE). */
export const toPositive = (n: number): number => n & 0x7fffffff;

/** The partition Kafka's default partitioner picks for a key. */
export function partitionFor(key: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`invalid partition count ${partitions}`);
  return toPositive(murmur2(key)) % partitions;
}
