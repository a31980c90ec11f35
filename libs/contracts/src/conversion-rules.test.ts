import { describe, expect, it } from '@jest/globals';
import { qualifiesAsConversion } from './conversion-rules';

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
    expect(qualifiesAsConversion('sign_up', new Set())).toBe(false);
    expect(qualifiesAsConversion('sign_up', null)).toBe(true);
  });
});
