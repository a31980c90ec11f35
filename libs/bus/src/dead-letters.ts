/**
 * Dead letters: where a message a consumer cannot take is parked, and what
 * the parked message says. The adapters (a message that does not decode) and
 * the services (one proven bad) both park through here, so every dead-letter
 * topic reads the same to `svcctl dlq`.
 */

import { Type } from '@sinclair/typebox';
import { DEAD_LETTER_HEADERS, deadLetterTopicName, type TopicSpec } from '@svc/contracts';

/** Header set on a dead-lettered message: why it was parked. */
export const DLQ_REASON_HEADER = DEAD_LETTER_HEADERS.reason;
/** Header set on a dead-lettered message: where it came from (`topic/partition/offset`). */
export const DLQ_SOURCE_HEADER = DEAD_LETTER_HEADERS.source;

/**
 * The dead-letter topic of `topic`: same partition count, and no schema, since
 * what lands there is by definition what did not match the source's schema.
 */
export function deadLetterTopicFor(topic: TopicSpec): TopicSpec {
  return { name: deadLetterTopicName(topic.name), partitions: topic.partitions, schema: Type.Unknown() };
}

/** Where in the log a message was read. */
export interface LogPosition {
  topic: string;
  partition: number;
  offset: string | number;
}

/**
 * A message to park, in whichever form its adapter holds it (Kafka's raw
 * bytes, the Postgres-backed log's JSON, a message not yet produced).
 */
interface DeadLetterSource<K, V, H> {
  key: K;
  value: V;
  headers?: Readonly<Record<string, H>> | undefined;
}

/**
 * The message that parks `message` on its dead-letter topic: its key and
 * value untouched, its headers, plus `reason` (one line; it replaces any
 * reason the message carried in) and, for a message read from the log,
 * `from`: where it was. A message that never reached the log (an outbox
 * row's) has no source header, not even one it carried in.
 */
export function deadLetterMessage<K, V, H = string>(
  message: DeadLetterSource<K, V, H>,
  reason: string,
  from?: LogPosition,
): { key: K; value: V; headers: Record<string, H | string> } {
  const headers: Record<string, H | string> = { ...message.headers, [DLQ_REASON_HEADER]: reason };
  if (from) headers[DLQ_SOURCE_HEADER] = `${from.topic}/${from.partition}/${from.offset}`;
  else delete headers[DLQ_SOURCE_HEADER];
  return { key: message.key, value: message.value, headers };
}
