import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { fullFormats } from 'ajv-formats/dist/formats';
import { isDateTime } from './formats';

const stock = (fullFormats['date-time'] as { validate: (s: string) => boolean }).validate;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Date-times in and around the common spelling: every field may be out of range, and any character may be swapped. */
const nearDateTime = fc
  .record({
    year: fc.integer({ min: 0, max: 9999 }),
    month: fc.integer({ min: 0, max: 13 }),
    day: fc.integer({ min: 0, max: 32 }),
    hour: fc.integer({ min: 0, max: 25 }),
    minute: fc.integer({ min: 0, max: 61 }),
    second: fc.integer({ min: 0, max: 61 }),
    fraction: fc.oneof(fc.constant(''), fc.constant('.'), fc.stringMatching(/^\.\d{1,12}$/)),
    zone: fc.oneof(
      fc.constantFrom('Z', 'z', '', '+00:00', '-00:00', '+0530', '+05', '+24:00', '-23:59', '+23:60', '+5:30', 'ZZ', 'UTC'),
      fc.tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 65 })).map(([s, h, m]) => `${s}${pad(h)}:${pad(m)}`),
    ),
    separator: fc.constantFrom('T', 'T', 'T', 't', ' ', '_'),
  })
  .map((d) => `${pad(d.year, 4)}-${pad(d.month)}-${pad(d.day)}${d.separator}${pad(d.hour)}:${pad(d.minute)}:${pad(d.second)}${d.fraction}${d.zone}`);

const mutated = fc
  .tuple(nearDateTime, fc.nat(40), fc.constantFrom('', '0', '9', 'T', 'Z', ':', '-', '.', ' ', 'x', '٣', '+'))
  .map(([s, at, c]) => s.slice(0, at) + c + s.slice(at + 1));

describe('date-time format', () => {
  it('accepts exactly what ajv-formats (full mode) accepts, on near-valid date-times', () => {
    fc.assert(
      fc.property(fc.oneof(nearDateTime, mutated, fc.string({ maxLength: 40 })), (s) => {
        expect(isDateTime(s)).toBe(stock(s));
      }),
      { seed: 18, numRuns: 20_000 },
    );
  });

  it.each([
    ['2026-11-25T23:59:59Z', true],
    ['2026-11-25T23:59:59.123456789Z', true],
    ['2026-11-25T23:59:59+05:30', true],
    ['2024-02-29T00:00:00Z', true],
    ['2000-02-29T00:00:00Z', true],
    ['1900-02-29T00:00:00Z', false],
    ['2023-02-29T00:00:00Z', false],
    ['2026-04-31T00:00:00Z', false],
    ['2026-11-25T24:00:00Z', false],
    ['2026-11-25T23:59:60Z', true], // a leap second, as ajv-formats allows it
    ['2026-11-25T23:59:59', false], // no zone
    ['2026-11-25T23:59:59.Z', false],
    ['2026-11-25t23:59:59z', true],
    ['2026-11-25 23:59:59Z', true],
    ['2026-11-25T23:59:59+0530', true],
    ['2026-11-25T23:59:59+24:00', false],
  ])('%s: %s', (s, valid) => {
    expect(isDateTime(s)).toBe(valid);
    expect(stock(s)).toBe(valid);
  });
});
