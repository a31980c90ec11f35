import { describe, expect, it } from '@jest/globals';
import { Type } from '@sinclair/typebox';
import type { TopicSpec } from '@svc/contracts';
import { DLQ_REASON_HEADER, DLQ_SOURCE_HEADER, deadLetterMessage, deadLetterTopicFor, type LogPosition } from './dead-letters';
import { assertValid } from './validate';

describe('deadLetterMessage', () => {
  const at: LogPosition = { topic: 'orders.placed', partition: 3, offset: '41' };
  const value = { id: 'a', total: 'lots' };

  const cases: Array<{ name: string; headers: Record<string, string> | undefined; from: LogPosition | undefined; parked: Record<string, string> }> = [
    {
      name: 'keeps the headers it came with, and adds why and where from',
      headers: { origin: 'test', traceparent: '00-abc-def-01' },
      from: at,
      parked: { origin: 'test', traceparent: '00-abc-def-01', [DLQ_REASON_HEADER]: 'bad total', [DLQ_SOURCE_HEADER]: 'orders.placed/3/41' },
    },
    {
      name: 'gives a message with no headers just the two',
      headers: undefined,
      from: { topic: 'orders.placed', partition: 0, offset: 7 },
      parked: { [DLQ_REASON_HEADER]: 'bad total', [DLQ_SOURCE_HEADER]: 'orders.placed/0/7' },
    },
    {
      name: 'replaces a reason and source the message carried in',
      headers: { origin: 'test', [DLQ_REASON_HEADER]: 'an earlier failure', [DLQ_SOURCE_HEADER]: 'elsewhere/0/1' },
      from: at,
      parked: { origin: 'test', [DLQ_REASON_HEADER]: 'bad total', [DLQ_SOURCE_HEADER]: 'orders.placed/3/41' },
    },
    {
      name: 'has no source for a message that never reached the log, not even one carried in',
      headers: { traceparent: '00-abc-def-01', [DLQ_SOURCE_HEADER]: 'elsewhere/0/1' },
      from: undefined,
      parked: { traceparent: '00-abc-def-01', [DLQ_REASON_HEADER]: 'bad total' },
    },
  ];

  it.each(cases)('$name', ({ headers, from, parked }) => {
    const message = { key: 'k', value, ...(headers ? { headers } : {}) };
    const before = structuredClone(message);
    const dead = deadLetterMessage(message, 'bad total', from);
    expect(dead).toEqual({ key: 'k', value, headers: parked });
    expect(dead.value).toBe(value);
    expect(message).toEqual(before);
  });

  it("keeps Kafka's raw bytes as they are", () => {
    const key = Buffer.from('k');
    const raw = Buffer.from([0x00, 0xff, 0x01]);
    const dead = deadLetterMessage({ key, value: raw, headers: { origin: Buffer.from('test') } }, 'not in the wire format', { ...at, offset: '9007199254740993' });
    expect(dead.key).toBe(key);
    expect(dead.value).toBe(raw);
    expect(dead.headers).toEqual({ origin: Buffer.from('test'), [DLQ_REASON_HEADER]: 'not in the wire format', [DLQ_SOURCE_HEADER]: 'orders.placed/3/9007199254740993' });
  });
});

describe('deadLetterTopicFor', () => {
  const topic: TopicSpec = {
    name: 'orders.placed',
    partitions: 2,
    schema: Type.Object({ id: Type.String(), total: Type.Number() }, { additionalProperties: false }),
  };

  it('gives a dead-letter topic the same partitions and no schema', () => {
    const dlq = deadLetterTopicFor(topic);
    expect(dlq).toMatchObject({ name: 'orders.placed.dlq', partitions: 2 });
    expect(() => assertValid(dlq, 'anything at all')).not.toThrow();
  });
});
