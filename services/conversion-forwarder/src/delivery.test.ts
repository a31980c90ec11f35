import { describe, expect, it } from '@jest/globals';
import { retryDelayMs } from './delivery';

describe('retryDelayMs', () => {
  const policy = { maxAttempts: 10, baseMs: 1_000, capMs: 30_000 };

  it.each([
    [1, 500, 1_000],
    [2, 1_000, 2_000],
    [3, 2_000, 4_000],
    [6, 15_000, 30_000],
    [20, 15_000, 30_000],
  ])('after attempt %i waits between %i and %i ms', (attempts, min, max) => {
    expect(retryDelayMs(attempts, policy, 0, () => 0)).toBe(min);
    expect(retryDelayMs(attempts, policy, 0, () => 1)).toBe(max);
  });

  it("takes the platform's Retry-After as a floor", () => {
    expect(retryDelayMs(1, policy, 60_000, () => 0.5)).toBe(60_000);
  });
});
