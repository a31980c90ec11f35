import { describe, expect, it } from '@jest/globals';
import { assignedTo, type GroupMember } from './assignment';

const key = (tp: { topic: string; partition: number }) => `${tp.topic}/${tp.partition}`;

describe('assignedTo', () => {
  const topics = new Map([
    ['orders', 4],
    ['payments', 3],
  ]);

  it('gives every partition to exactly one member, evenly, whatever order members are listed in', () => {
    const members: GroupMember[] = ['c', 'a', 'b'].map((memberId) => ({ memberId, topics: ['orders', 'payments'] }));
    const owned = members.map((m) => assignedTo(m.memberId, members, topics).map(key));
    const all = owned.flat();
    expect(new Set(all).size).toBe(7);
    expect(all).toHaveLength(7);
    for (const mine of owned) expect(mine.length).toBeGreaterThanOrEqual(2);
    expect(assignedTo('a', [...members].reverse(), topics).map(key)).toEqual(owned[1]);
  });

  it('gives a lone member everything, and a non-member nothing', () => {
    const members = [{ memberId: 'solo', topics: ['orders', 'payments'] }];
    expect(assignedTo('solo', members, topics)).toHaveLength(7);
    expect(assignedTo('ghost', members, topics)).toEqual([]);
  });

  it('only assigns a topic among the members subscribed to it', () => {
    const members = [
      { memberId: 'a', topics: ['orders'] },
      { memberId: 'b', topics: ['orders', 'payments'] },
    ];
    const a = assignedTo('a', members, topics).map(key);
    const b = assignedTo('b', members, topics).map(key);
    expect(a.every((k) => k.startsWith('orders/'))).toBe(true);
    expect(b.filter((k) => k.startsWith('payments/'))).toHaveLength(3);
    expect(new Set([...a, ...b]).size).toBe(7);
  });

  it('spreads single-partition topics over the members', () => {
    const many = new Map(Array.from({ length: 40 }, (_, i) => [`t${i}`, 1] as const));
    const members = ['a', 'b'].map((memberId) => ({ memberId, topics: [...many.keys()] }));
    expect(assignedTo('a', members, many).length).toBeGreaterThan(8);
    expect(assignedTo('b', members, many).length).toBeGreaterThan(8);
  });
});
