import { describe, expect, it } from '@jest/globals';
import { liveContext, pageContext, parseUserAgent, staticContext } from './context';
import { createRedactor } from './redaction';
import { FakeTab } from './test-support/fake-env';

describe('user agent parsing', () => {
  it.each([
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.56', 'Edge', '126.0.2592.56', 'Windows', '10', 'desktop'],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15', 'Safari', '17.4', 'macOS', '10.15.7', 'desktop'],
    ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1', 'Safari', '17.4', 'iOS', '17.4', 'mobile'],
    ['Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Mobile Safari/537.36', 'Chrome', '125.0.0.0', 'Android', '14', 'mobile'],
    ['Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:126.0) Gecko/20100101 Firefox/126.0', 'Firefox', '126.0', 'Linux', undefined, 'desktop'],
    ['Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0 Mobile/15E148 Safari/604.1', 'Chrome', '120.0', 'iOS', '16.6', 'tablet'],
  ])('%s', (ua, browser, version, os, osVersion, type) => {
    const parsed = parseUserAgent(ua);
    expect(parsed.browser).toEqual({ name: browser, version });
    expect(parsed.os).toEqual(osVersion ? { name: os, version: osVersion } : { name: os });
    expect(parsed.device?.type).toBe(type);
  });

  it('names Apple devices and Android models', () => {
    expect(parseUserAgent('Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X)').device).toEqual({ type: 'mobile', manufacturer: 'Apple', model: 'iPhone' });
    expect(parseUserAgent('Mozilla/5.0 (Linux; Android 14; Pixel 8) Mobile').device).toEqual({ type: 'mobile', model: 'Pixel 8' });
    expect(parseUserAgent('', true).device).toEqual({ type: 'mobile' });
  });
});

describe('context parts', () => {
  it('fills the page from the document, redacted', () => {
    const tab = new FakeTab({ url: 'https://shop.example/cart?email=a%40b.co&utm_source=x#otp=1', referrer: 'https://mail.example/?token=t', title: 'Cart' });
    expect(pageContext(tab.win, createRedactor(), tab.doc.referrer)).toEqual({
      url: 'https://shop.example/cart?email=<redacted>&utm_source=x#otp=<redacted>',
      path: '/cart',
      title: 'Cart',
      referrer: 'https://mail.example/?token=<redacted>',
      search: '?email=<redacted>&utm_source=x',
      hash: '#otp=<redacted>',
      language: 'en',
    });
  });

  it('reads device, locale, timezone, screen and network', () => {
    const tab = new FakeTab();
    const nav = tab.win.navigator;
    if (nav) nav.connection = { type: 'wifi', saveData: false };
    const ctx = staticContext(nav, Date.parse('2026-03-01T00:00:00Z'));
    expect(ctx).toMatchObject({ browser: { name: 'Chrome' }, os: { name: 'Linux' }, locale: 'en-US', user_agent: nav?.userAgent });
    expect(typeof ctx.timezone).toBe('string');
    expect(typeof ctx.timezone_offset_mins).toBe('number');
    expect(liveContext(tab.win)).toEqual({
      screen: { width: 1920, height: 1080, density: 2, viewport: { innerWidth: 1280, innerHeight: 720 } },
      network: { online: true, wifi: true, cellular: false, saveData: false },
    });
  });
});
