import { describe, expect, it } from '@jest/globals';
import type { InboundEvent } from '@svc/contracts';
import { eventIdentity, isPhoneRegion, normaliseEmail, normalisePhone, signalsOf } from './signals';

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

describe('normalisePhone (E.164, libphonenumber metadata)', () => {
  // [written, read in, E.164]: national forms with their trunk prefixes, international forms, every one a valid number.
  it.each([
    ['98765 43210', 'IN', '+919876543210'],
    ['098765-43210', 'IN', '+919876543210'],
    ['+91 98765 43210', 'IN', '+919876543210'],
    ['020 7946 0958', 'GB', '+442079460958'],
    ['07911 123456', 'GB', '+447911123456'],
    ['+44 20 7946 0958', 'IN', '+442079460958'],
    ['0044 20 7946 0958', 'FR', '+442079460958'],
    ['030 12345678', 'DE', '+493012345678'],
    ['+49 30 12345678', 'GB', '+493012345678'],
    ['(650) 555-1234', 'US', '+16505551234'],
    ['011 44 20 7946 0958', 'US', '+442079460958'],
    ['(416) 555-0199', 'CA', '+14165550199'],
    ['06 12 34 56 78', 'FR', '+33612345678'],
    ['090-1234-5678', 'JP', '+819012345678'],
    ['0412 345 678', 'AU', '+61412345678'],
    ['(11) 91234-5678', 'BR', '+5511912345678'],
    ['+55 11 91234-5678', 'DE', '+5511912345678'],
    ['02-312-3456', 'KR', '+8223123456'],
    ['021 123 4567', 'ZA', '+27211234567'],
    ['0912 345 678', 'TW', '+886912345678'],
    ['612 345 678', 'ES', '+34612345678'],
    ['0812-3456-7890', 'ID', '+6281234567890'],
  ])('%j in %s → %s', (raw, region, expected) => {
    expect(normalisePhone(raw, region)).toBe(expected);
  });

  it.each([
    ['+44 20 7946 0958 ext. 12', '+442079460958'],
    ['+1 650 555 1234 x99', '+16505551234'],
    [9876543210, '+919876543210'],
    ['919876543210', '+919876543210'],
  ])('%j with the deployment default (calling code 91) → %s', (raw, expected) => {
    expect(normalisePhone(raw)).toBe(expected);
  });

  it('reads a national number by a calling code as by its main region', () => {
    expect(normalisePhone('020 7946 0958', '44')).toBe('+442079460958');
    expect(normalisePhone('(650) 555-1234', '1')).toBe('+16505551234');
  });

  it('does not take a national number of one country for another', () => {
    // Sheffield's 0114 is not an international prefix, and India's 10 digits are not a British number.
    expect(normalisePhone('0114 496 0000', 'GB')).toBe('+441144960000');
    expect(normalisePhone('98765 43210', 'GB')).toBeNull();
  });

  // Never guessed: what is not a valid number of its country is no phone.
  it.each([
    ['12345', 'GB'],
    ['020 7946 095', 'GB'],
    ['+44 20 7946 09581234', 'GB'],
    ['+0 123 456 789', 'IN'],
    ['+999 123 456 789', 'IN'],
    ['call me', 'IN'],
    ['+91 98765 4321O', 'IN'],
    ['+1234567890123456', 'IN'],
    ['', 'IN'],
    [undefined, 'IN'],
    [-5, 'IN'],
    ['1'.repeat(41), 'IN'],
  ])('%j in %s → null', (raw, region) => {
    expect(normalisePhone(raw, region)).toBeNull();
  });
});

describe('isPhoneRegion', () => {
  it.each([
    ['GB', true],
    ['IN', true],
    // A calling code is how the deployment's fallback reads numbers, not a region of the rules.
    ['44', false],
    ['1', false],
    ['gb', false],
    ['XX', false],
    ['999', false],
    ['0', false],
    ['', false],
    ['GBR', false],
  ])('%j → %s', (value, expected) => {
    expect(isPhoneRegion(value)).toBe(expected);
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
