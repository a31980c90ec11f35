import { describe, expect, it } from '@jest/globals';
import { isLoopbackHost, resolveConfig } from './config';
import type { SvcConfig } from './types';

const base = { writeKey: 'uk_live_abc', apiHost: 'https://api.example.com/functions/v1' };

describe('resolveConfig', () => {
  it('applies every default of the spec', () => {
    const c = resolveConfig(base);
    expect(c).toMatchObject({
      writeKey: 'uk_live_abc',
      eventUrl: 'https://api.example.com/functions/v1/v1-batch',
      consentUrl: 'https://api.example.com/functions/v1/v1-consent',
      flushAt: 20,
      flushInterval: 10_000,
      maxRetries: 3,
      sessionTimeoutMs: 30 * 60_000,
      trackPages: true,
      trackClicks: false,
      captureLinkQueryParams: false,
      maskQueryParams: [],
      enableFingerprinting: false,
      respectDNT: false,
      respectGPC: true,
      consentMode: 'advisory',
      storagePrefix: 'svc_',
      debug: false,
      onError: undefined,
    });
  });

  it('throws on a missing writeKey or apiHost', () => {
    expect(() => resolveConfig({ apiHost: base.apiHost } as SvcConfig)).toThrow('writeKey is required');
    expect(() => resolveConfig({ ...base, writeKey: '  ' })).toThrow('writeKey is required');
    expect(() => resolveConfig({ writeKey: 'uk_live_x' } as SvcConfig)).toThrow('apiHost is required');
    expect(() => resolveConfig(undefined as unknown as SvcConfig)).toThrow('config object');
  });

  it('throws on plain HTTP to a production host and allows it for loopback', () => {
    expect(() => resolveConfig({ ...base, apiHost: 'http://api.example.com/functions/v1' })).toThrow('HTTPS');
    expect(() => resolveConfig({ ...base, apiHost: 'http://10.0.0.5:8080' })).toThrow('HTTPS');
    expect(() => resolveConfig({ ...base, apiHost: 'ftp://api.example.com' })).toThrow('absolute http(s) URL');
    expect(() => resolveConfig({ ...base, apiHost: '/functions/v1' })).toThrow('absolute http(s) URL');
    expect(() => resolveConfig({ ...base, apiHost: 'https://api.example.com/v1?x=1' })).toThrow('without query');
    for (const host of ['http://localhost:3000/functions/v1', 'http://127.0.0.1:54321/functions/v1', 'http://[::1]:8080', 'http://app.localhost']) {
      expect(resolveConfig({ ...base, apiHost: host }).eventUrl).toBe(`${host}/v1-batch`);
    }
  });

  it('appends eventPath and consentPath; an empty eventPath posts to apiHost itself', () => {
    expect(resolveConfig({ ...base, apiHost: 'https://h.example/', eventPath: '' }).eventUrl).toBe('https://h.example');
    expect(resolveConfig({ ...base, eventPath: 'ingest', consentPath: '/c' })).toMatchObject({
      eventUrl: 'https://api.example.com/functions/v1/ingest',
      consentUrl: 'https://api.example.com/functions/v1/c',
    });
  });

  it('bounds numbers and ignores values of the wrong type', () => {
    const c = resolveConfig({ ...base, flushAt: 500, maxRetries: 0, sessionTimeout: 0.001, flushInterval: -5, consentMode: 'bogus' as 'enforced' });
    expect(c).toMatchObject({ flushAt: 100, maxRetries: 0, sessionTimeoutMs: 60, flushInterval: 10_000, consentMode: 'advisory' });
    expect(resolveConfig({ ...base, flushAt: 2.7, trackPages: 'no' as unknown as boolean }).flushAt).toBe(2);
    expect(resolveConfig({ ...base, consentMode: 'enforced', maskQueryParams: ['ref', 3 as unknown as string] })).toMatchObject({
      consentMode: 'enforced',
      maskQueryParams: ['ref'],
      trackPages: true,
    });
  });
});

describe('isLoopbackHost', () => {
  it('knows localhost, 127/8 and ::1', () => {
    for (const h of ['localhost', 'LOCALHOST', 'a.localhost', '127.0.0.1', '127.1.2.3', '[::1]']) expect(isLoopbackHost(h)).toBe(true);
    for (const h of ['example.com', '10.0.0.1', '0.0.0.0', 'localhost.example.com', '128.0.0.1']) expect(isLoopbackHost(h)).toBe(false);
  });
});
