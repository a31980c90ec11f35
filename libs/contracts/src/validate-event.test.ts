import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { batchEntry, mutatedEvent, nestedValue, validEvent } from '@svc/testkit';
import { checkEvent } from './validate-event';
import { EventReasons } from './messages';
import { InboundEventSchema } from './events';
import { Limits } from './limits';
import { validatorFor } from './schema-validator';
import { toStorable } from './storable';
import { RawEventEnvelopeSchema } from './topics';

const base = { messageId: 'm-1', anonymousId: 'anon_1', timestamp: '2026-11-20T10:00:00.000Z' };
const ok = (type: string, extra: Record<string, unknown> = {}) => ({ type, ...base, ...extra });

describe('checkEvent: every per-event reason of the spec', () => {
  const cases: Array<[string, unknown, string]> = [
    ['null event', null, EventReasons.eventRequired],
    ['empty object', {}, EventReasons.eventRequired],
    ['an array', [], EventReasons.eventRequired],
    ['a string', 'track', EventReasons.eventRequired],
    ['no type', { ...base }, EventReasons.typeRequired],
    ['empty type', { ...base, type: '' }, EventReasons.typeRequired],
    ['unknown type', ok('click'), 'Invalid event type: click'],
    ['type of wrong case', ok('Track'), 'Invalid event type: Track'],
    ['numeric type', ok('x', { type: 7 }), 'Invalid event type: 7'],
    ['no messageId', { type: 'page', anonymousId: 'a1', timestamp: base.timestamp }, EventReasons.messageIdRequired],
    ['numeric messageId', ok('page', { messageId: 12 }), EventReasons.messageIdRequired],
    ['messageId over 200', ok('page', { messageId: 'm'.repeat(201) }), EventReasons.invalidMessageId],
    ['no anonymousId', ok('page', { anonymousId: undefined }), EventReasons.anonymousIdRequired],
    ['no timestamp', ok('page', { timestamp: undefined }), EventReasons.timestampRequired],
    ['unparseable timestamp', ok('page', { timestamp: 'yesterday' }), EventReasons.invalidTimestamp],
    ['impossible date', ok('page', { timestamp: '2026-13-45T10:00:00Z' }), EventReasons.invalidTimestamp],
    ['year zero', ok('page', { timestamp: '0000-01-01T00:00:00Z' }), EventReasons.invalidTimestamp],
    ['track without event', ok('track'), EventReasons.eventNameRequired],
    ['track with empty event', ok('track', { event: '' }), EventReasons.eventNameRequired],
    ['track with event 201 chars', ok('track', { event: 'e'.repeat(201) }), EventReasons.eventNameTooLong],
    ['alias without userId', ok('alias', { previousId: 'p' }), EventReasons.userIdRequiredForAlias],
    ['group without groupId', ok('group'), EventReasons.groupIdRequiredForGroup],
    ['junk anonymousId', ok('page', { anonymousId: 'undefined' }), EventReasons.invalidAnonymousId],
    ['long anonymousId', ok('page', { anonymousId: 'a'.repeat(201) }), EventReasons.invalidAnonymousId],
    ['numeric anonymousId', ok('page', { anonymousId: 5 }), EventReasons.invalidAnonymousId],
    ['junk userId', ok('identify', { userId: '[object Object]' }), EventReasons.invalidUserId],
    ['junk userId on alias', ok('alias', { userId: 'null' }), EventReasons.invalidUserId],
    ['junk previousId', ok('alias', { userId: 'u1', previousId: 'guest' }), EventReasons.invalidPreviousId],
  ];
  it.each(cases)('%s', (_name, event, reason) => {
    expect(checkEvent(event)).toEqual({ ok: false, reason });
  });

  const valid: Array<[string, Record<string, unknown>]> = [
    ['track', ok('track', { event: 'purchase', properties: { value: 1 } })],
    ['track with 200-char name', ok('track', { event: 'e'.repeat(200) })],
    ['identify without userId or traits', ok('identify')],
    ['identify with userId null', ok('identify', { userId: null })],
    ['page with nothing else', ok('page')],
    ['screen without a name', ok('screen')],
    ['alias', ok('alias', { userId: 'u1', previousId: 'p1' })],
    ['group', ok('group', { groupId: 'acme' })],
    ['timestamp with offset', ok('page', { timestamp: '2026-11-20T10:00:00+05:30' })],
    ['context of any shape is never a reason', ok('page', { context: { screen: 'big', consent: 'maybe' } })],
  ];
  it.each(valid)('accepts %s', (_name, event) => {
    expect(checkEvent(event).ok).toBe(true);
  });

  it('drops a non-object properties, traits or context instead of failing the event', () => {
    const result = checkEvent(ok('track', { event: 'x', properties: 'nope', traits: [1], context: 3 }));
    expect(result.ok && result.event).toEqual(ok('track', { event: 'x' }));
  });

  it('reports the first rule broken, in the order of the spec table', () => {
    expect(checkEvent({ type: 'track', anonymousId: 'null' })).toEqual({ ok: false, reason: EventReasons.messageIdRequired });
  });
});

describe('InboundEventSchema agrees with checkEvent', () => {
  const validate = validatorFor(InboundEventSchema);
  // Screening (denylist) is code-only; every other rule must be in the JSON Schema too.
  const events: unknown[] = [
    ok('track'),
    ok('track', { event: 'e' }),
    ok('track', { event: 'e'.repeat(201) }),
    ok('alias'),
    ok('alias', { userId: 'u' }),
    ok('group'),
    ok('group', { groupId: 'g' }),
    ok('identify'),
    ok('page', { timestamp: 'not a time' }),
    ok('page', { anonymousId: 'a'.repeat(201) }),
    ok('click'),
    { ...base },
  ];
  it.each(events.map((e) => [JSON.stringify(e).slice(0, 80), e]))('%s', (_n, event) => {
    expect(validate(event)).toBe(checkEvent(event).ok);
  });
});

describe('checkEvent: malformed fields the spec names no reason for (docs/architecture.md, "Per-event validation")', () => {
  const rejected: Array<[string, Record<string, unknown>, string]> = [
    ['group with a numeric groupId', ok('group', { groupId: 42 }), EventReasons.groupIdRequiredForGroup],
    ['group with an empty groupId', ok('group', { groupId: '' }), EventReasons.groupIdRequiredForGroup],
    ['identify with an empty userId', ok('identify', { userId: '' }), EventReasons.invalidUserId],
    ['identify with a numeric userId', ok('identify', { userId: 42 }), EventReasons.invalidUserId],
    ['alias with a null userId', ok('alias', { userId: null }), EventReasons.userIdRequiredForAlias],
    ['page with a numeric previousId', ok('page', { previousId: 7 }), EventReasons.invalidPreviousId],
    ['track with a 300-character name', ok('track', { event: 'e'.repeat(300) }), EventReasons.eventNameTooLong],
    ['track with a numeric name', ok('track', { event: 42 }), EventReasons.eventNameRequired],
    ['a date that does not exist', ok('page', { timestamp: '2026-02-30T10:00:00Z' }), EventReasons.invalidTimestamp],
    ['an hour that does not exist', ok('page', { timestamp: '2026-11-20T24:00:00Z' }), EventReasons.invalidTimestamp],
    ['nesting past the hard cap', ok('track', { event: 'x', properties: nestedValue(Limits.maxNestingDepth) }), EventReasons.processingFailed],
  ];
  it.each(rejected)('rejects %s alone', (_name, event, reason) => {
    expect(checkEvent(event)).toEqual({ ok: false, reason });
  });

  const normalised: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ['a numeric event on a page: dropped (page names are $pageview)', ok('page', { event: 42 }), ok('page')],
    ['a 300-character event on a page: dropped', ok('page', { event: 'e'.repeat(300) }), ok('page')],
    ['an empty event on an identify: dropped', ok('identify', { event: '' }), ok('identify')],
    ['a numeric groupId on a track: dropped', ok('track', { event: 'x', groupId: 5 }), ok('track', { event: 'x' })],
    ['a timestamp without a zone: read as UTC', ok('page', { timestamp: '2026-11-20T10:00' }), ok('page', { timestamp: '2026-11-20T10:00:00.000Z' })],
    ['a timestamp with a space and no colon in the offset', ok('page', { timestamp: '2026-11-20 10:00:00+0530' }), ok('page', { timestamp: '2026-11-20T04:30:00.000Z' })],
    ['U+0000 and a lone surrogate in a property', ok('track', { event: 'x', properties: { a: 'b\u0000', c: '\uD800' } }), ok('track', { event: 'x', properties: { a: 'b', c: '\uFFFD' } })],
  ];
  it.each(normalised)('accepts %s', (_name, event, expected) => {
    expect(checkEvent(event)).toEqual({ ok: true, event: expected });
  });

  it('keeps a valid name on a page as sent', () => {
    expect(checkEvent(ok('page', { event: 'Home' }))).toEqual({ ok: true, event: ok('page', { event: 'Home' }) });
  });
});

describe('property: every event checkEvent accepts is one the events.raw schema accepts', () => {
  const envelopeIsValid = validatorFor(RawEventEnvelopeSchema);
  const envelope = (event: unknown) => ({
    v: 1,
    orgId: '6f1f7a52-9d5c-4d8e-9a51-0c3f1f6f2b11',
    receivedAt: '2026-11-25T00:00:00.000Z',
    requestId: 'r',
    clientIp: '127.0.0.1',
    event,
  });

  it('holds for mutated events, as they arrive over the wire (fixed seed)', () => {
    fc.assert(
      fc.property(fc.oneof(mutatedEvent, batchEntry), (sent) => {
        const wire: unknown = JSON.parse(JSON.stringify(sent) ?? 'null');
        const checked = checkEvent(wire);
        if (checked.ok) {
          expect(envelopeIsValid(envelope(checked.event))).toBe(true);
          // Storable: what reaches jsonb holds no U+0000 and no lone surrogate.
          expect(toStorable(checked.event)).toEqual({ ok: true, value: checked.event });
        } else {
          expect(Object.values(EventReasons).some((r) => r === checked.reason || checked.reason.startsWith('Invalid event type: '))).toBe(true);
        }
      }),
      { seed: 15, numRuns: 3_000 },
    );
  });

  it('and a valid event is always accepted', () => {
    fc.assert(
      fc.property(validEvent(), (event) => {
        expect(checkEvent(event).ok).toBe(true);
      }),
      { seed: 15, numRuns: 500 },
    );
  });
});
