import { describe, expect, it } from '@jest/globals';
import { checkEvent } from '@svc/contracts';
import { derivedAnonymousId, fromSegment, type SegmentEnvelope } from './map-event';

const RECEIVED = new Date('2026-11-21T12:00:30.000Z');
const base = { messageId: 'm-1', anonymousId: 'a-1' };

/** [case, message, batch envelope, route's type, what the mapped event must contain, keys it must not have]. */
const CASES: Array<[string, Record<string, unknown>, SegmentEnvelope, string | undefined, Record<string, unknown>, string[]]> = [
  ['userId without anonymousId: derived from the userId', { type: 'track', event: 'x', messageId: 'm', userId: 'alice', timestamp: '2026-11-21T12:00:00.000Z' }, {}, undefined, { anonymousId: 'user:alice', userId: 'alice' }, []],
  ['anonymousId kept when sent with userId', { ...base, type: 'identify', userId: 'alice', timestamp: '2026-11-21T12:00:00.000Z' }, {}, undefined, { anonymousId: 'a-1' }, []],
  ['null anonymousId with userId: derived', { type: 'identify', messageId: 'm', anonymousId: null, userId: 'bob', timestamp: '2026-11-21T12:00:00.000Z' }, {}, undefined, { anonymousId: 'user:bob' }, []],
  ['neither id: left for checkEvent', { type: 'page', messageId: 'm', timestamp: '2026-11-21T12:00:00.000Z' }, {}, undefined, {}, ['anonymousId']],
  ['clock skew: receivedAt - (sentAt - timestamp), client value kept', { ...base, type: 'track', event: 'x', timestamp: '2026-11-21T13:00:00.000Z' }, { sentAt: '2026-11-21T13:00:10.000Z' }, undefined, { timestamp: '2026-11-21T12:00:20.000Z', originalTimestamp: '2026-11-21T13:00:00.000Z' }, []],
  ["the event's own sentAt wins over the batch's", { ...base, type: 'track', event: 'x', timestamp: '2026-11-21T13:00:00.000Z', sentAt: '2026-11-21T13:00:01.000Z' }, { sentAt: '2026-11-21T13:00:10.000Z' }, undefined, { timestamp: '2026-11-21T12:00:29.000Z' }, []],
  ["RudderStack's originalTimestamp is the client time", { ...base, type: 'track', event: 'x', originalTimestamp: '2026-11-21T11:00:00.000Z', sentAt: '2026-11-21T11:00:30.000Z' }, {}, undefined, { timestamp: '2026-11-21T12:00:00.000Z', originalTimestamp: '2026-11-21T11:00:00.000Z' }, []],
  ['no sentAt: the client time stands', { ...base, type: 'track', event: 'x', timestamp: '2026-11-21T10:00:00Z' }, {}, undefined, { timestamp: '2026-11-21T10:00:00Z', originalTimestamp: '2026-11-21T10:00:00Z' }, []],
  ['no client time: the receive time', { ...base, type: 'track', event: 'x' }, { sentAt: '2026-11-21T13:00:10.000Z' }, undefined, { timestamp: RECEIVED.toISOString() }, ['originalTimestamp']],
  ['a client time that is no time: left for checkEvent', { ...base, type: 'track', event: 'x', timestamp: 'yesterday' }, { sentAt: '2026-11-21T13:00:10.000Z' }, undefined, { timestamp: 'yesterday' }, ['originalTimestamp']],
  ['an unreadable sentAt: no correction', { ...base, type: 'track', event: 'x', timestamp: '2026-11-21T10:00:00.000Z' }, { sentAt: 42 }, undefined, { timestamp: '2026-11-21T10:00:00.000Z' }, []],
  ['the route names the type', { ...base, type: 'page', event: 'x', timestamp: '2026-11-21T10:00:00.000Z' }, {}, 'track', { type: 'track' }, []],
  ["a page's name and category go into properties", { ...base, type: 'page', name: 'Pricing', category: 'Docs', properties: { path: '/p' } }, {}, undefined, { properties: { path: '/p', name: 'Pricing', category: 'Docs' } }, []],
  ["a screen's name goes into properties, not over one sent there", { ...base, type: 'screen', name: 'Home', properties: { name: 'Kept' } }, {}, undefined, { properties: { name: 'Kept' } }, []],
  ["the batch's context and integrations fill in the event's", { ...base, type: 'track', event: 'x', context: { locale: 'fr' }, integrations: { All: false } }, { context: { locale: 'de', timezone: 'UTC' }, integrations: { Mixpanel: true } }, undefined, { context: { locale: 'fr', timezone: 'UTC' }, integrations: { All: false, Mixpanel: true } }, []],
  ['writeKey is never carried on', { ...base, type: 'track', event: 'x', writeKey: 'uk_live_secret' }, {}, undefined, {}, ['writeKey']],
];

describe('fromSegment', () => {
  it.each(CASES)('%s', (_name, message, envelope, type, contains, lacks) => {
    const mapped = fromSegment(message, envelope, RECEIVED, type as never) as Record<string, unknown>;
    expect(mapped).toMatchObject(contains);
    for (const key of lacks) expect(mapped).not.toHaveProperty(key);
  });

  it('leaves what is not an object alone, for checkEvent to refuse', () => {
    expect(fromSegment(null, {}, RECEIVED)).toBeNull();
    expect(fromSegment('x', {}, RECEIVED)).toBe('x');
  });

  it('never changes the message it was given', () => {
    const message = { ...base, type: 'screen', name: 'Home', writeKey: 'k' };
    fromSegment(message, { context: { a: 1 } }, RECEIVED);
    expect(message).toEqual({ ...base, type: 'screen', name: 'Home', writeKey: 'k' });
  });

  it("what a server library sends with only a userId passes the one per-event check", () => {
    const mapped = fromSegment({ type: 'identify', messageId: 'm', userId: 'u-1', traits: { email: 'a@example.com' }, timestamp: '2026-11-21T12:00:00.000Z' }, { sentAt: '2026-11-21T12:00:00.100Z' }, RECEIVED);
    expect(checkEvent(mapped)).toMatchObject({ ok: true, event: { anonymousId: 'user:u-1', timestamp: '2026-11-21T12:00:29.900Z' } });
  });
});

describe('derivedAnonymousId', () => {
  it.each([
    ['reads as the userId while it fits in 200 characters', 'u'.repeat(195), /^user:u{195}$/],
    ['is the SHA-256 of the userId past that', 'u'.repeat(196), /^user:[0-9a-f]{64}$/],
  ])('%s', (_name, userId, shape) => {
    expect(derivedAnonymousId(userId)).toMatch(shape);
    expect(derivedAnonymousId(userId)).toBe(derivedAnonymousId(userId));
  });
});

describe('a message without messageId (Segment’s HTTP API does not require one)', () => {
  const message = { type: 'track', event: 'Order Completed', userId: 'u-1', properties: { total: 20, items: [{ sku: 'a' }] }, timestamp: '2026-11-21T12:00:00.000Z' };
  const idOf = (m: Record<string, unknown>, envelope: SegmentEnvelope = {}, type?: string) => (fromSegment(m, envelope, RECEIVED, type as never) as { messageId: string }).messageId;

  it('gets one derived from its content, which passes the per-event check', () => {
    expect(idOf(message)).toMatch(/^content:[0-9a-f]{64}$/);
    expect(checkEvent(fromSegment(message, {}, RECEIVED))).toMatchObject({ ok: true });
  });

  it.each([
    ['its exact retry, with a new sentAt', { ...message, sentAt: '2026-11-21T12:00:09.000Z' }, { sentAt: '2026-11-21T12:00:10.000Z' }],
    ['its keys in another order, at every level', { timestamp: message.timestamp, properties: { items: [{ sku: 'a' }], total: 20 }, userId: 'u-1', event: 'Order Completed', type: 'track' }, {}],
    ['with the write key in the body', { ...message, writeKey: 'uk_live_x' }, {}],
    ['with an empty messageId', { ...message, messageId: '' }, {}],
  ])('is the same for %s', (_name, other, envelope) => {
    expect(idOf(other, envelope)).toBe(idOf(message));
  });

  it.each([
    ['another time', { ...message, timestamp: '2026-11-21T12:00:01.000Z' }, undefined],
    ['another property value', { ...message, properties: { total: 21, items: [{ sku: 'a' }] } }, undefined],
    ['another user', { ...message, userId: 'u-2' }, undefined],
    ['another type from the route', message, 'page'],
  ])('differs for %s', (_name, other, type) => {
    expect(idOf(other, {}, type)).not.toBe(idOf(message));
  });

  it('leaves a messageId that was sent as it is', () => {
    expect(idOf({ ...message, messageId: 'm-7' })).toBe('m-7');
  });
});
