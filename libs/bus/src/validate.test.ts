import { describe, expect, it } from '@jest/globals';
import { Type } from '@sinclair/typebox';
import type { TopicSpec } from '@svc/contracts';
import { SchemaViolationError } from './errors';
import { assertAllValid, assertValid, murmur2, partitionFor, toPositive } from './validate';

describe('murmur2 (Kafka-compatible)', () => {
  // Kafka's own UtilsTest#testMurmur2.
  const kafkaUtilsTest: Array<[string | Buffer, number]> = [
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    [Buffer.from([0x61, 0x62, 0x63]), 479470107],
  ];
  // kafkajs's Java-compatible partitioner vectors (generated with Kafka's Utils.murmur2),
  // plus the 1..5-byte keys used by other Kafka ports: every tail length is covered.
  const kafkajsVectors: Array<[string, number]> = [
    ['0', 971027396],
    ['1', -1993445489],
    ['12', 126087238],
    ['123', -267702483],
    ['1234', -1614185708],
    ['12345', -1188365604],
    ['128', -326012175],
    ['2187', -1508407203],
    ['16384', -325739742],
    ['78125', -1654490814],
    ['279936', 1462227128],
    ['823543', -2014198330],
    ['2097152', 607668903],
    ['4782969', -1182699775],
    ['10000000', -1830336757],
    ['19487171', -1603849305],
    ['35831808', -857013643],
    ['62748517', -1167431028],
    ['105413504', -381294639],
    ['170859375', -1658323481],
    ['100:48069', 1009543857],
  ];

  it.each([...kafkaUtilsTest, ...kafkajsVectors])('murmur2(%p) = %p', (key, expected) => {
    expect(murmur2(key)).toBe(expected);
  });

  it('hashes the UTF-8 bytes of a string key', () => {
    expect(murmur2('zürich')).toBe(murmur2(Buffer.from('zürich', 'utf8')));
    expect(murmur2('zürich')).not.toBe(murmur2(Buffer.from('zürich', 'latin1')));
  });

  it('toPositive clears the sign bit like Kafka, including for MIN_VALUE', () => {
    expect(toPositive(-2147483648)).toBe(0);
    expect(toPositive(-1)).toBe(0x7fffffff);
    expect(toPositive(42)).toBe(42);
  });
});

describe('partitionFor', () => {
  it("matches Kafka's default partitioner", () => {
    // toPositive(-1993445489) % 8 = 154038159 % 8 = 7, by hand from the vector above.
    expect(partitionFor('1', 8)).toBe(7);
    expect(partitionFor('0', 3)).toBe(971027396 % 3);
  });

  it('is stable and spreads keys evenly', () => {
    const counts = new Array<number>(8).fill(0);
    const keys = Array.from({ length: 8000 }, (_, i) => `user-${i}`);
    const first = keys.map((k) => partitionFor(k, 8));
    expect(keys.map((k) => partitionFor(k, 8))).toEqual(first);
    for (const p of first) counts[p] = (counts[p] ?? 0) + 1;
    for (const n of counts) expect(n).toBeGreaterThan(850);
    for (const n of counts) expect(n).toBeLessThan(1150);
  });

  it('refuses a partition count that is not a positive integer', () => {
    expect(() => partitionFor('k', 0)).toThrow(RangeError);
    expect(() => partitionFor('k', 1.5)).toThrow(RangeError);
  });
});

describe('schema checks', () => {
  const topic: TopicSpec = {
    name: 'orders.placed',
    partitions: 2,
    schema: Type.Object({ id: Type.String(), total: Type.Number() }, { additionalProperties: false }),
  };

  it('accepts a valid value', () => {
    expect(() => assertValid(topic, { id: 'a', total: 1 })).not.toThrow();
  });

  it('names the topic and the failing field', () => {
    const err = captured(() => assertValid(topic, { id: 'a', total: 'lots' }));
    expect(err).toBeInstanceOf(SchemaViolationError);
    expect((err as SchemaViolationError).topic).toBe('orders.placed');
    expect((err as SchemaViolationError).problem).toMatch(/^\/total /);
    expect((err as Error).message).toMatch(/orders\.placed.*\/total/);
  });

  it('says which message of a batch failed', () => {
    const err = captured(() => assertAllValid(topic, [{ id: 'a', total: 1 }, { id: 2, total: 1 }]));
    expect((err as Error).message).toMatch(/\/id .*\(message 2 of 2\)/);
    expect(() => assertAllValid(topic, [{ id: 'a', total: 1 }])).not.toThrow();
  });
});

function captured(fn: () => void): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}
