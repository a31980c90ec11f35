import fc from 'fast-check';
import { EVENT_TYPES, Limits } from '@svc/contracts';

/**
 * fast-check arbitraries for what clients send: valid events built from the
 * contracts' own fields and limits, and the same events mutated the way real
 * clients and attackers get them wrong. Shared by the unit properties (the
 * gateway's check against the topic schema) and the fuzz suites that post
 * them to the real stack.
 */

/** Strings that break things: NUL, lone surrogates, junk ids, prototype keys, overlong and huge values. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\uD800',
    'x\uDFFFy',
    '\uFEFF',
    'null',
    'undefined',
    '[object Object]',
    '00000000-0000-0000-0000-000000000000',
    '__proto__',
    'constructor',
    'prototype',
    "'; drop table identity.profiles; --",
    '%00',
    '%ED%A0%80',
    '../../etc/passwd',
    '2026-02-30T10:00:00Z',
    '2026-11-20T10:00',
    '1e309',
  ),
  fc.integer({ min: 199, max: 301 }).map((n) => 'e'.repeat(n)),
  fc.constant('s'.repeat(40 * 1024)),
);

/** A value nested `depth` levels deep (objects and arrays alternating). */
export const nestedValue = (depth: number): unknown => {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { k: value };
  return value;
};

/** An object of `n` keys. */
export const wideObject = (n: number): Record<string, number> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));

/** Any JSON value, weighted towards the shapes that have broken servers. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 2, arbitrary: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(
      nestedValue(40),
      nestedValue(Limits.maxNestingDepth + 5),
      wideObject(500),
      [],
      {},
      JSON.parse('{"__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}}'),
    ),
  },
);

const isoTimestamp = fc
  .date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString());

/** A valid event of the given type (or any), every field as the spec states it. */
export const validEvent = (type?: (typeof EVENT_TYPES)[number]): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .record({
      type: type ? fc.constant(type) : fc.constantFrom(...EVENT_TYPES),
      messageId: fc.uuid(),
      anonymousId: fc.uuid().map((u) => `anon_${u}`),
      timestamp: isoTimestamp,
      name: fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim() !== ''),
      userId: fc.uuid().map((u) => `user_${u}`),
      properties: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }),
    })
    .map(({ type, name, userId, properties, ...required }) => {
      const event: Record<string, unknown> = { type, ...required, properties };
      if (type === 'track') event.event = name;
      if (type === 'alias') event.userId = userId;
      if (type === 'identify') Object.assign(event, { userId, traits: { email: `${name.length}@example.com` } });
      if (type === 'group') event.groupId = `group_${name.length}`;
      event.context = { library: { name: 'fuzz', version: '1' }, page: { url: 'https://example.com/' } };
      return event;
    });

/** The fields a mutation touches: every field of the event, plus the prototype keys. */
const FIELDS = ['type', 'messageId', 'anonymousId', 'timestamp', 'event', 'userId', 'groupId', 'previousId', 'properties', 'traits', 'context', '__proto__', 'constructor'];

/** A valid event with zero to three of its fields removed or replaced by a hostile value. */
export const mutatedEvent: fc.Arbitrary<Record<string, unknown>> = fc
  .tuple(validEvent(), fc.array(fc.tuple(fc.constantFrom(...FIELDS), fc.option(hostileValue, { nil: undefined })), { maxLength: 3 }))
  .map(([event, mutations]) => {
    const out: Record<string, unknown> = { ...event };
    for (const [field, value] of mutations) {
      if (value === undefined) delete out[field];
      // defineProperty: `__proto__` must become an own key, as JSON.parse makes it, not a prototype.
      else Object.defineProperty(out, field, { value, enumerable: true, writable: true, configurable: true });
    }
    return out;
  });

/** One entry of a batch: mostly events, valid or mutated, sometimes not an event at all. */
export const batchEntry: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: validEvent() },
  { weight: 5, arbitrary: mutatedEvent },
  { weight: 1, arbitrary: hostileValue },
);

/** A batch of 1 to `max` entries (the spec allows 100). */
export const batch = (max = 20): fc.Arbitrary<unknown[]> => fc.array(batchEntry, { minLength: 1, maxLength: max });
