import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { partitionFor } from '../validate';

/**
 * The adapter picks each message's partition with partitionFor (so it can
 * group a call's messages per partition before sending). That must be where
 * kafkajs's DefaultPartitioner, the Java-compatible murmur2 one, and so any
 * Kafka client with default settings, puts the key.
 */
describe('partitionFor agrees with kafkajs DefaultPartitioner', () => {
  const metadata = (n: number): PartitionMetadata[] =>
    Array.from({ length: n }, (_, partitionId) => ({ partitionId, leader: 1, replicas: [1], isr: [1], partitionErrorCode: 0, offlineReplicas: [] }));
  const keys = [
    '',
    'a',
    'ab',
    'abc',
    'abcd',
    'customer-42',
    'ünïcödé-ключ-鍵',
    '🙂🙃',
    ...Array.from({ length: 500 }, (_, i) => randomBytes(1 + (i % 40)).toString(i % 2 ? 'hex' : 'base64')),
  ];

  it.each([1, 2, 3, 4, 8, 12, 31, 64])('for %i partitions', (n) => {
    const partitioner = Partitioners.DefaultPartitioner();
    for (const key of keys) {
      const theirs = partitioner({ topic: 't', partitionMetadata: metadata(n), message: { key, value: null } });
      expect([key, partitionFor(key, n)]).toEqual([key, theirs]);
    }
  });
});
