import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { timeOrderedUuid } from './time-ordered-uuid';

describe('timeOrderedUuid', () => {
  it('is a version 7 UUID with the RFC 9562 variant, its first 48 bits the time in ms', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 48 - 1 }), (ms) => {
        const id = timeOrderedUuid(ms);
        expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(ms);
      }),
    );
  });

  it('sorts by the time it was made, and two made in one millisecond differ', () => {
    const earlier = timeOrderedUuid(1_000);
    const later = timeOrderedUuid(1_001);
    expect(earlier < later).toBe(true);
    expect(timeOrderedUuid(5)).not.toBe(timeOrderedUuid(5));
  });
});
