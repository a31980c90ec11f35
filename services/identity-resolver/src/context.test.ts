import { describe, expect, it } from '@jest/globals';
import { CLICK_ID_TYPES } from '@svc/contracts';
import { clickIdsOf, earlierTouch, fingerprintOf, laterTouch, sessionIdOf, storedContext, touchOf } from './context';

const at = '2026-01-01T00:00:00.000Z';

describe('touchOf', () => {
  it.each([
    ['UTM fields', { campaign: { source: 'google', medium: 'cpc', name: 'spring' } }, { source: 'google', medium: 'cpc', campaign: 'spring', at }],
    ['name only', { campaign: { name: 'launch' } }, { source: null, medium: null, campaign: 'launch', at }],
    ['click ID only: the platform names source and medium', { campaign: { fbclid: 'fb.1' } }, { source: 'facebook', medium: 'cpc', campaign: null, at }],
    ['UTM source beats the click ID platform', { campaign: { source: 'newsletter', gclid: 'g' } }, { source: 'newsletter', medium: null, campaign: null, at }],
    ['blank values are absent', { campaign: { source: '  ', medium: '' } }, null],
    ['no campaign', { page: { url: 'https://x.test' } }, null],
    ['campaign not an object', { campaign: 'google' }, null],
    ['no context', undefined, null],
  ])('%s', (_name, context, expected) => {
    expect(touchOf(context, at)).toEqual(expected);
  });

  it('orders touches by event time: the earlier first touch, the later (or tying newer) last touch', () => {
    const a = { source: 'a', medium: null, campaign: null, at: '2026-01-02T00:00:00Z' };
    const b = { source: 'b', medium: null, campaign: null, at: '2026-01-01T00:00:00Z' };
    const c = { ...a, source: 'c' };
    expect(earlierTouch(a, b)).toBe(b);
    expect(earlierTouch(b, a)).toBe(b);
    expect(earlierTouch(a, c)).toBe(a);
    expect(laterTouch(a, b)).toBe(a);
    expect(laterTouch(a, c)).toBe(c);
    expect(earlierTouch(null, a)).toBe(a);
    expect(laterTouch(a, null)).toBe(a);
  });
});

describe('clickIdsOf', () => {
  it('reads every click-ID field the spec lists', () => {
    const campaign = Object.fromEntries(CLICK_ID_TYPES.map((t) => [t, `${t}-value`]));
    expect(clickIdsOf({ campaign }).map((c) => [c.clickType, c.clickId])).toEqual(CLICK_ID_TYPES.map((t) => [t, `${t}-value`]));
    expect(CLICK_ID_TYPES).toHaveLength(13);
  });

  it.each([
    ['campaign source and medium', { source: 'google', medium: 'paid', gclid: 'G1' }, [{ clickType: 'gclid', clickId: 'G1', campaignSource: 'google', campaignMedium: 'paid' }]],
    ['platform when no UTM', { ttclid: ' T1 ' }, [{ clickType: 'ttclid', clickId: 'T1', campaignSource: 'tiktok', campaignMedium: 'cpc' }]],
    ['instagram share id is social', { igshid: 'I' }, [{ clickType: 'igshid', clickId: 'I', campaignSource: 'instagram', campaignMedium: 'social' }]],
    ['non-strings and blanks ignored', { gclid: 5, fbclid: '' }, []],
  ])('%s', (_name, campaign, expected) => {
    expect(clickIdsOf({ campaign })).toEqual(expected);
  });
});

describe('session and fingerprint', () => {
  it.each([
    [{ session: { id: 's-1' } }, 's-1'],
    [{ session: { id: '' } }, null],
    [{ session: 's-1' }, null],
    [{}, null],
  ])('session of %j is %j', (context, expected) => {
    expect(sessionIdOf(context)).toBe(expected);
  });

  it.each([
    [{ consent: true, fingerprint: { hash: 'h1' } }, 'h1'],
    [{ consent: { fingerprinting: true }, fingerprint: { hash: 'h1' } }, 'h1'],
    [{ consent: { identity: true }, fingerprint: { hash: 'h1' } }, 'h1'],
    [{ consent: { analytics: true }, fingerprint: { hash: 'h1' } }, null],
    [{ fingerprint: { hash: 'h1' } }, null],
    [{ consent: true, fingerprint: { hash: '' } }, null],
    [{ consent: true }, null],
  ])('fingerprint of %j is %j', (context, expected) => {
    expect(fingerprintOf(context)).toBe(expected);
  });

  it('stores a fingerprint only when consent grants it', () => {
    expect(storedContext({ fingerprint: { hash: 'h' }, locale: 'en' })).toEqual({ locale: 'en' });
    expect(storedContext({ consent: true, fingerprint: { hash: 'h' } })).toEqual({ consent: true, fingerprint: { hash: 'h' } });
    expect(storedContext(undefined)).toEqual({});
  });
});
