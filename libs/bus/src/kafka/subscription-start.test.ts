import { describe, expect, it } from '@jest/globals';
import type { Kafka } from 'kafkajs';
import { KafkaSubscription, type SubscriptionSettings } from './subscription';

/**
 * The start of a subscription against a kafkajs consumer reduced to what
 * start() touches: a KRaft broker may answer UNKNOWN_TOPIC_OR_PARTITION for a
 * topic created moments ago, and that must not fail a service's start.
 */
function fakeKafka(subscribeFailures: readonly string[]) {
  const failures = [...subscribeFailures];
  const listeners = new Map<string, (e: { payload: unknown }) => void>();
  const calls = { subscribe: 0, disconnect: 0 };
  const consumer = {
    events: { GROUP_JOIN: 'join', CRASH: 'crash' },
    on: (event: string, listener: (e: { payload: unknown }) => void) => listeners.set(event, listener),
    connect: async () => undefined,
    subscribe: async () => {
      calls.subscribe += 1;
      const type = failures.shift();
      if (type) throw Object.assign(new Error('This server does not host this topic-partition'), { type });
    },
    run: async () => listeners.get('join')?.({ payload: { memberAssignment: {} } }),
    disconnect: async () => {
      calls.disconnect += 1;
    },
    pause: () => undefined,
    resume: () => undefined,
  };
  return { kafka: { consumer: () => consumer } as unknown as Kafka, calls };
}

function subscription(kafka: Kafka): KafkaSubscription {
  const settings = {
    kafka,
    groupId: 'g',
    topics: [{ name: 't', partitions: 1 }],
    handler: async () => undefined,
    maxBatchSize: 10,
    gather: undefined,
    fromBeginning: true,
    codec: {},
    deadLetter: async () => undefined,
    lag: undefined,
    consumer: { sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 30_000, heartbeatIntervalMs: 1_000, maxWaitTimeMs: 500 },
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  } as unknown as SubscriptionSettings;
  return new KafkaSubscription(settings);
}

describe('KafkaSubscription.start', () => {
  it('subscribes again while the broker does not serve a new topic yet, then joins', async () => {
    const { kafka, calls } = fakeKafka(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE']);
    await subscription(kafka).start();
    expect(calls.subscribe).toBe(3);
    expect(calls.disconnect).toBe(0);
  });

  it('fails at once on any other refusal, and leaves nothing connected', async () => {
    const { kafka, calls } = fakeKafka(['TOPIC_AUTHORIZATION_FAILED']);
    await expect(subscription(kafka).start()).rejects.toThrow(/does not host/);
    expect(calls.subscribe).toBe(1);
    expect(calls.disconnect).toBe(1);
  });
});
