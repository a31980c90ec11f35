import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { conversionCandidate, conversionCurrency, conversionValue, hashEmail, hashPhone, orderIdOf, qualifiesAsConversion } from './conversions';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe('qualifiesAsConversion', () => {
  it.each([
    ['purchase', true],
    ['$purchase', true],
    ['sign_up', true],
    ['$sign_up', true],
    ['add_to_cart', true],
    ['initiate_checkout', true],
    ['lead', true],
    ['$subscribe', true],
    ['Purchase Completed', false],
    ['Purchase', false],
    ['purchase ', false],
    ['$$purchase', false],
    ['$pageview', false],
    ['refund', false],
  ])('%j → %s with the defaults', (name, expected) => {
    expect(qualifiesAsConversion(name)).toBe(expected);
  });

  it('a custom set replaces the defaults, matched exactly', () => {
    const custom = new Set(['Order Completed', 'purchase']);
    expect(qualifiesAsConversion('Order Completed', custom)).toBe(true);
    expect(qualifiesAsConversion('purchase', custom)).toBe(true);
    expect(qualifiesAsConversion('$purchase', custom)).toBe(false);
    expect(qualifiesAsConversion('sign_up', custom)).toBe(false);
    expect(qualifiesAsConversion('sign_up', new Set())).toBe(true);
    expect(qualifiesAsConversion('sign_up', null)).toBe(true);
  });
});

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

describe('candidate payload', () => {
  it.each([
    ['A-1', 'A-1'],
    [1234, '1234'],
    ['', null],
    [{}, null],
  ])('order_id %j → %j', (raw, expected) => {
    expect(orderIdOf(raw)).toBe(expected);
  });

  it('hashes normalised email and E.164 phone', () => {
    expect(hashEmail(' Alice@Example.com ')).toBe(sha('alice@example.com'));
    expect(hashPhone('98765 43210')).toBe(sha('+919876543210'));
    expect(hashEmail('nope')).toBeNull();
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

  it('carries value, currency, order and hashes, never clear text', () => {
    const c = conversionCandidate({ ...input, properties: { value: '49.90', currency: 'usd', order_id: 'o-9' } });
    expect(c).toMatchObject({ value: 49.9, currency: 'USD', orderId: 'o-9', hashedEmail: sha('alice@example.com'), hashedPhone: sha('+919876543210'), clientIp: '203.0.113.9', userAgent: 'UA', pageUrl: 'https://shop.test/thanks' });
    expect(JSON.stringify(c)).not.toMatch(/alice|9876543210/);
  });

  it('INR by default; a bad value, or a value in an unknown currency, becomes null', () => {
    expect(conversionCandidate({ ...input, properties: { value: 10 } })).toMatchObject({ value: 10, currency: 'INR' });
    expect(conversionCandidate({ ...input, properties: { value: 'lots' } })).toMatchObject({ value: null, currency: 'INR' });
    expect(conversionCandidate({ ...input, properties: { value: 10, currency: 'rupees' } })).toMatchObject({ value: null, currency: 'INR' });
  });
});
