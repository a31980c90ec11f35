import { describe, expect, it } from '@jest/globals';
import type { ConversionCandidate } from '@svc/contracts';
import type { ConnectorRule } from '@svc/conversions';
import { isPastWindow, pickClick, qualifyingConnectors, toConversion, type StoredClick } from './plan';

const now = new Date('2026-11-21T12:00:00Z');
const daysAgo = (d: number) => new Date(now.getTime() - d * 86_400_000);
const click = (type: string, id: string, firstDays: number, lastDays = firstDays, isExhausted = false): StoredClick => ({
  type,
  id,
  firstSeenAt: daysAgo(firstDays),
  lastSeenAt: daysAgo(lastDays),
  isExhausted,
});

describe('pickClick', () => {
  it.each([
    ['google_ads', [click('gclid', 'g1', 3)], 'g1'],
    ['google_ads', [click('wbraid', 'w1', 1), click('gbraid', 'b1', 2)], 'b1'],
    ['google_ads', [click('wbraid', 'w1', 1), click('gclid', 'g1', 5)], 'g1'],
    ['google_ads', [click('gclid', 'old', 10, 10), click('gclid', 'new', 9, 1)], 'new'],
    ['google_ads', [click('fbclid', 'f1', 1)], null],
    ['google_ads', [click('gclid', 'g1', 1, 1, true)], null],
    ['google_ads', [click('gclid', 'g1', 91)], null],
    ['google_ads', [click('gclid', 'g1', 89)], 'g1'],
    ['google_ads', [click('dclid', 'd1', 1), click('msclkid', 'm1', 1)], null],
    ['meta', [click('fbclid', 'f1', 27)], 'f1'],
    ['meta', [click('fbclid', 'f1', 29)], null],
    ['meta', [click('gclid', 'g1', 1)], null],
    ['meta', [], null],
  ] as const)('%s with %j → %s', (platform, clicks, expected) => {
    expect(pickClick(platform, clicks, now).click?.id ?? null).toBe(expected);
  });

  it('returns clicks past their window to be marked exhausted, and only those', () => {
    const { expired } = pickClick('google_ads', [click('gclid', 'old', 120), click('gclid', 'live', 5), click('gbraid', 'done', 200, 200, true)], now);
    expect(expired.map((c) => c.id)).toEqual(['old']);
  });

  it('counts the window from the first sighting', () => {
    expect(isPastWindow(click('gclid', 'g', 91, 1), now)).toBe(true);
    expect(isPastWindow(click('somethingelse', 's', 1000), now)).toBe(false);
  });
});

const candidate = (eventName: string, orgId = 'org-a'): ConversionCandidate => ({
  v: 1,
  orgId,
  profileId: 'p',
  eventId: 'e',
  messageId: 'm-1',
  eventName,
  eventTimestamp: '2026-11-21T10:00:00.000Z',
  value: 10,
  currency: 'USD',
  orderId: 'o-1',
  hashedEmail: 'he',
  hashedPhone: 'hp',
  hashedPhoneDigits: 'hpd',
  clientIp: '203.0.113.1',
  userAgent: 'UA',
  pageUrl: null,
});

describe('qualifyingConnectors', () => {
  const google: ConnectorRule = { id: 'g', orgId: 'org-a', platform: 'google_ads', eventNames: null };
  const meta: ConnectorRule = { id: 'm', orgId: 'org-a', platform: 'meta', eventNames: new Set(['Order Completed']) };
  const other: ConnectorRule = { id: 'o', orgId: 'org-b', platform: 'meta', eventNames: null };

  it.each([
    ['purchase', ['g']],
    ['$purchase', ['g']],
    ['sign_up', ['g']],
    ['Order Completed', ['m']],
    ['Purchase Completed', []],
    ['Purchase', []],
    ['$pageview', []],
  ])('%j goes to %j', (name, expected) => {
    expect(qualifyingConnectors(candidate(name), [google, meta, other]).map((c) => c.id)).toEqual(expected);
  });

  it("never matches another organisation's connector", () => {
    expect(qualifyingConnectors(candidate('purchase', 'org-b'), [google, meta]).map((c) => c.id)).toEqual([]);
  });
});

describe('toConversion', () => {
  it('carries hashes and the click, and reads the event time', () => {
    const c = toConversion(candidate('purchase'), { type: 'gclid', id: 'g1', firstSeenAt: daysAgo(1) });
    expect(c).toMatchObject({ messageId: 'm-1', value: 10, currency: 'USD', orderId: 'o-1', hashedEmail: 'he', hashedPhone: 'hp', hashedPhoneDigits: 'hpd', click: { id: 'g1' } });
    expect(c.eventTime.toISOString()).toBe('2026-11-21T10:00:00.000Z');
  });

  it('a candidate from before hashedPhoneDigits existed still converts', () => {
    const { hashedPhoneDigits: _omitted, ...old } = candidate('purchase');
    expect(toConversion(old, { type: 'fbclid', id: 'f', firstSeenAt: now }).hashedPhoneDigits).toBeNull();
  });
});
