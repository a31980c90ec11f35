import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { normaliseEmail, normalisePhone } from '@svc/identity';
import { conversionCandidate, conversionCurrency, conversionValue, orderIdOf } from './conversions';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe('conversionValue', () => {
  it.each([
    [12.5, 12.5],
    [0, 0],
    [1e12, 1e12],
    ['12.5', 12.5],
    [' 99 ', 99],
    ['1e3', null],
    ['12,5', null],
    ['$12', null],
    ['0x10', null],
    ['', null],
    ['-3', null],
    [-0.01, null],
    [1e12 + 1, null],
    [Number.NaN, null],
    [Number.POSITIVE_INFINITY, null],
    [true, null],
    [null, null],
    [undefined, null],
    [{ amount: 5 }, null],
  ])('%j → %j', (raw, expected) => {
    expect(conversionValue(raw)).toBe(expected);
  });
});

describe('conversionCurrency', () => {
  it.each([
    [undefined, 'INR', true],
    [null, 'INR', true],
    ['', 'INR', true],
    ['USD', 'USD', true],
    ['eur', 'EUR', true],
    [' gbp ', 'GBP', true],
    ['US$', 'INR', false],
    ['EURO', 'INR', false],
    [978, 'INR', false],
  ])('%j → %s (valid %s)', (raw, currency, valid) => {
    expect(conversionCurrency(raw)).toEqual({ currency, valid });
  });
});

const input = {
  orgId: '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f',
  profileId: '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e70',
  eventId: '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e71',
  messageId: 'm-1',
  eventName: 'purchase',
  eventTimestamp: '2026-01-01T00:00:00.000Z',
  context: { ip_address: '203.0.113.9', user_agent: 'UA', page: { url: 'https://shop.test/thanks' } },
  email: 'alice@example.com',
  phone: '+919876543210',
  clientIp: '198.51.100.1',
};

describe('candidate payload', () => {
  it.each([
    ['A-1', 'A-1'],
    [1234, '1234'],
    ['', null],
    [{}, null],
  ])('order_id %j → %j', (raw, expected) => {
    expect(orderIdOf(raw)).toBe(expected);
  });

  it('hashes what it is given, normalised, and no hash for none', () => {
    expect(conversionCandidate({ ...input, properties: {}, email: null, phone: null })).toMatchObject({ hashedEmail: null, hashedPhone: null, hashedPhoneDigits: null });
  });


  it('carries value, currency, order and hashes, never clear text', () => {
    const c = conversionCandidate({ ...input, properties: { value: '49.90', currency: 'usd', order_id: 'o-9' } });
    expect(c).toMatchObject({ value: 49.9, currency: 'USD', orderId: 'o-9', hashedEmail: sha('alice@example.com'), hashedPhone: sha('+919876543210'), hashedPhoneDigits: sha('919876543210'), clientIp: '203.0.113.9', userAgent: 'UA', pageUrl: 'https://shop.test/thanks' });
    expect(JSON.stringify(c)).not.toMatch(/alice|9876543210/);
  });

  it('INR by default; a bad value, or a value in an unknown currency, becomes null', () => {
    expect(conversionCandidate({ ...input, properties: { value: 10 } })).toMatchObject({ value: 10, currency: 'INR' });
    expect(conversionCandidate({ ...input, properties: { value: 'lots' } })).toMatchObject({ value: null, currency: 'INR' });
    expect(conversionCandidate({ ...input, properties: { value: 10, currency: 'rupees' } })).toMatchObject({ value: null, currency: 'INR' });
  });
});

// Fixed SHA-256 vectors (the first is the one the platforms' docs publish), so a
// change of normalisation or encoding cannot pass unnoticed.
describe('hashing vectors', () => {
  const base = { ...input, properties: {}, context: {}, phone: null, clientIp: null };

  it.each([
    [' Test@Example.com ', '973dfe463ec85785f5f95af5ba3906eedb2d931c24e69824a89ea65dba4e813b'],
    ['TEST@EXAMPLE.COM', '973dfe463ec85785f5f95af5ba3906eedb2d931c24e69824a89ea65dba4e813b'],
    ['alice@example.com', 'ff8d9819fc0e12bf0d24892e45987e249a28dce836a85cad60e28eaaa8c6d976'],
  ])('email %j → %s', (raw, hex) => {
    expect(conversionCandidate({ ...base, email: normaliseEmail(raw), phone: null }).hashedEmail).toBe(hex);
  });

  it.each([
    ['+1 (650) 555-1234', '91', 'a2996076d3ad4af5dc818b908b3d8e354f26ededf7df0e0aa6ac354143805ee0', '6069d14bf122fdfd931dc7beb58e5dfbba395b1faf05bdcd42d12358d63d8599'],
    ['001 650 555 1234', '91', 'a2996076d3ad4af5dc818b908b3d8e354f26ededf7df0e0aa6ac354143805ee0', '6069d14bf122fdfd931dc7beb58e5dfbba395b1faf05bdcd42d12358d63d8599'],
    ['98765 43210', '91', 'f3a47ce5ce3d4ca8ad15225a245b2759022f79489f5c62719b8c9490f7aab90e', '92b5072176e723878b5e06ff3ca61898e4eb74e8c46642a0f2db800b17364ab0'],
    ['+91 98765-43210', '91', 'f3a47ce5ce3d4ca8ad15225a245b2759022f79489f5c62719b8c9490f7aab90e', '92b5072176e723878b5e06ff3ca61898e4eb74e8c46642a0f2db800b17364ab0'],
    // The organisation's region: a British national number as Google Ads and Meta expect it.
    ['020 7946 0958', 'GB', sha('+442079460958'), sha('442079460958')],
    ['+44 20 7946 0958', 'IN', sha('+442079460958'), sha('442079460958')],
  ])('phone %j read in %s → E.164 %s (Google Ads), digits %s (Meta)', (raw, region, withPlus, digitsOnly) => {
    const phone = normalisePhone(raw, region);
    expect(conversionCandidate({ ...base, email: null, phone })).toMatchObject({ hashedPhone: withPlus, hashedPhoneDigits: digitsOnly });
  });
});
