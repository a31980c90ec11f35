import { describe, expect, it } from '@jest/globals';
import { consumersForPool, resolverPoolSize } from './start';

describe('the resolver connection pool and its consumers', () => {
  it.each([1, 2, 4, 8])('a pool sized for %i members serves exactly that many', (consumers) => {
    expect(consumersForPool(resolverPoolSize(consumers))).toBe(consumers);
  });

  it.each([
    [10, 4],
    [11, 4],
    [3, 1],
    [1, 1],
  ])('a pool of %i connections serves %i members (at least one)', (poolMax, consumers) => {
    expect(consumersForPool(poolMax)).toBe(consumers);
  });
});
