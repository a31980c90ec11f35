import { describe, expect, it } from '@jest/globals';
import type { SchemaRegistryClient } from '@confluentinc/schemaregistry';
import { Type } from '@sinclair/typebox';
import type { Admin } from 'kafkajs';
import type { TopicSpec } from '@svc/contracts';
import { TopicManager } from './topics';

const spec: TopicSpec = { name: 'unit.topics', partitions: 2, schema: Type.Object({ id: Type.String() }) };

/** A broker with one topic whose partition count the test sets, and whose metadata answers when the test says. */
function fakes() {
  const broker = {
    partitions: 2,
    reads: 0,
    failNext: false,
    hold: undefined as Promise<void> | undefined,
    /** Reads still answered as for a topic created moments ago: an error of this type (wrapped as kafkajs's retrier does, or not), or leaders unknown. */
    unserved: 0,
    unservedAs: 'UNKNOWN_TOPIC_OR_PARTITION' as string,
    wrapped: false,
    exists: true,
    /** createTopics' own wait for leaders fails as when another process created the topic a moment before. */
    createFailsUnserved: false,
  };
  const admin = {
    listTopics: async () => (broker.exists ? [spec.name] : []),
    createTopics: async () => {
      broker.exists = true;
      if (broker.createFailsUnserved) throw Object.assign(new Error('This server does not host this topic-partition'), { type: 'UNKNOWN_TOPIC_OR_PARTITION' });
      return true;
    },
    fetchTopicMetadata: async () => {
      broker.reads++;
      if (broker.hold) await broker.hold;
      if (broker.failNext) {
        broker.failNext = false;
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      }
      let leader = 0;
      if (broker.unserved > 0) {
        broker.unserved--;
        if (broker.unservedAs === 'no leader') leader = -1;
        else {
          const error = Object.assign(new Error('This server does not host this topic-partition'), { type: broker.unservedAs, retriable: true });
          throw broker.wrapped ? Object.assign(new Error('Number of retries exceeded'), { name: 'KafkaJSNumberOfRetriesExceeded', originalError: error }) : error;
        }
      }
      return { topics: [{ name: spec.name, partitions: Array.from({ length: broker.partitions }, (_, i) => ({ partitionId: i, leader })) }] };
    },
  } as unknown as Admin;
  const registry = { register: async () => 7 } as unknown as SchemaRegistryClient;
  return { broker, manager: new TopicManager(async () => admin, registry, 0) };
}

describe('TopicManager', () => {
  it('re-reads a stale topic behind the callers: they get the last state at once, then the new one', async () => {
    const { broker, manager } = fakes();
    expect(await manager.ensure(spec, true)).toEqual({ partitions: 2, schemaId: 7 });
    broker.partitions = 4;
    let release = () => {};
    broker.hold = new Promise<void>((r) => (release = r));
    // Stale (refreshMs 0): answered from what was read, while the re-read waits on the broker.
    expect(await manager.ensure(spec, true)).toEqual({ partitions: 2, schemaId: 7 });
    expect(await manager.ensure(spec, true)).toEqual({ partitions: 2, schemaId: 7 });
    const readsWhileHeld = broker.reads;
    release();
    broker.hold = undefined;
    await new Promise((r) => setImmediate(r));
    expect(readsWhileHeld).toBe(2); // one re-read at a time
    expect(await manager.ensure(spec, true)).toEqual({ partitions: 4, schemaId: 7 });
  });

  it('keeps the last state when a re-read fails, and tries again on the next call', async () => {
    const { broker, manager } = fakes();
    await manager.ensure(spec, true);
    broker.failNext = true;
    expect(await manager.ensure(spec, true)).toEqual({ partitions: 2, schemaId: 7 });
    await new Promise((r) => setImmediate(r));
    broker.partitions = 3;
    expect(await manager.ensure(spec, true)).toEqual({ partitions: 2, schemaId: 7 });
    await new Promise((r) => setImmediate(r));
    expect(await manager.ensure(spec, true)).toEqual({ partitions: 3, schemaId: 7 });
  });

  it('waits for the re-read when the caller needs more than what was read (more partitions)', async () => {
    const { broker, manager } = fakes();
    await manager.ensure(spec, true);
    broker.partitions = 5;
    expect(await manager.ensure({ ...spec, partitions: 5 }, true)).toEqual({ partitions: 5, schemaId: 7 });
  });

  it.each([
    ['an unknown topic-partition', 'UNKNOWN_TOPIC_OR_PARTITION', false],
    ['the same error wrapped by kafkajs after its own retries', 'LEADER_NOT_AVAILABLE', true],
    ['partitions without a leader yet', 'no leader', false],
  ])('waits while the broker answers %s for a topic created moments ago, then answers', async (_, unservedAs, wrapped) => {
    const { broker, manager } = fakes();
    Object.assign(broker, { unserved: 3, unservedAs, wrapped });
    expect(await manager.ensure(spec, true)).toEqual({ partitions: 2, schemaId: 7 });
    expect(broker.unserved).toBe(0);
  });

  it('creates a missing topic; when its own wait for leaders fails as the broker takes the topic up, waits and answers', async () => {
    const { broker, manager } = fakes();
    Object.assign(broker, { exists: false, createFailsUnserved: true, unserved: 2 });
    expect(await manager.ensure(spec, true)).toEqual({ partitions: 2, schemaId: 7 });
    expect(broker.exists).toBe(true);
  });

  it('does not wait on other errors', async () => {
    const { broker, manager } = fakes();
    Object.assign(broker, { unserved: 1, unservedAs: 'TOPIC_AUTHORIZATION_FAILED' });
    await expect(manager.ensure(spec, true)).rejects.toThrow(/does not host/);
  });
});
