import { describe, expect, it } from '@jest/globals';
import type { InboundEvent } from '@svc/contracts';
import { eventIdentity, normaliseEmail, normalisePhone, signalsOf } from './signals';

describe('normaliseEmail', () => {
  it.each([
    ['  Alice@Example.COM ', 'alice@example.com'],
    ['bob+tag@mail.example.co.in', 'bob+tag@mail.example.co.in'],
    ['first.last@example.com', 'first.last@example.com'],
    ['not-an-email', null],
    ['two@@example.com', null],
    ['space in@example.com', null],
    ['no-tld@example', null],
    ['', null],
    [`${'a'.repeat(250)}@example.com`, null],
    [42, null],
    [null, null],
  ])('%j → %j', (raw, expected) => {
    expect(normaliseEmail(raw)).toBe(expected);
  });
});

describe('normalisePhone (E.164, default country 91)', () => {
  it.each([
    ['+91 98765 43210', '+919876543210'],
    ['+1 (650) 555-1234', '+16505551234'],
    ['0044 20 7946 0958', '+442079460958'],
    ['98765 43210', '+919876543210'],
    ['098765-43210', '+919876543210'],
    ['919876543210', '+919876543210'],
    ['+44 20 7946 0958 ext. 12', '+442079460958'],
    ['+1 650 555 1234 x99', '+16505551234'],
    [9876543210, '+919876543210'],
    ['12345', null],
    ['+0 123 456 789', null],
    ['call me', null],
    ['+91 98765 4321O', null],
    ['+1234567890123456', null],
    ['', null],
    [undefined, null],
    [-5, null],
  ])('%j → %j', (raw, expected) => {
    expect(normalisePhone(raw)).toBe(expected);
  });

  it('uses the given default country code for national numbers', () => {
    expect(normalisePhone('650 555 1234', '1')).toBe('+16505551234');
  });
});

const base = { messageId: 'm', anonymousId: 'anon-1', timestamp: '2026-01-01T00:00:00Z' };
const ev = (e: Partial<InboundEvent> & Pick<InboundEvent, 'type'>): InboundEvent => ({ ...base, ...e }) as InboundEvent;

describe('eventIdentity', () => {
  it.each<[string, InboundEvent, Partial<ReturnType<typeof eventIdentity>>]>([
    ['identify traits', ev({ type: 'identify', userId: 'u1', traits: { email: ' A@B.io ', phone: '+91 98765 43210' } }), { userId: 'u1', email: 'a@b.io', phone: '+919876543210', previousId: null }],
    ['Segment-style context.traits on track', ev({ type: 'track', event: 'x', context: { traits: { email: 'c@d.io' } } }), { userId: null, email: 'c@d.io' }],
    ['event traits win over context.traits', ev({ type: 'identify', traits: { email: 'e@f.io' }, context: { traits: { email: 'c@d.io' } } }), { email: 'e@f.io' }],
    ['group traits describe the group, not the person', ev({ type: 'group', groupId: 'g', traits: { email: 'sales@acme.io' } }), { email: null, phone: null }],
    ['invalid email is no signal', ev({ type: 'identify', traits: { email: 'nope' } }), { email: null }],
    ['alias with a distinct previousId', ev({ type: 'alias', userId: 'u2', previousId: 'old-user' }), { userId: 'u2', previousId: 'old-user' }],
    ['self-alias', ev({ type: 'alias', userId: 'u2', previousId: 'u2' }), { previousId: null }],
    ['alias previousId equal to anonymousId', ev({ type: 'alias', userId: 'u2', previousId: 'anon-1' }), { previousId: null }],
    ['previousId on a non-alias is ignored', ev({ type: 'identify', userId: 'u2', previousId: 'x' }), { previousId: null }],
    ['null userId', ev({ type: 'page', userId: null }), { userId: null }],
  ])('%s', (_name, event, expected) => {
    expect(eventIdentity(event)).toMatchObject({ anonymousId: 'anon-1', ...expected });
  });

  it('lists signals strongest first', () => {
    const identity = eventIdentity(ev({ type: 'identify', userId: 'u', traits: { email: 'a@b.io', phone: '9876543210' } }));
    expect(signalsOf(identity).map((s) => s.type)).toEqual(['user_id', 'email', 'phone', 'anonymous_id']);
  });
});
