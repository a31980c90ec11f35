import { describe, expect, it } from '@jest/globals';
import { screenContext } from './context';

const fingerprint = { hash: 'abc', components: { canvas: 'x' } };

describe('screenContext', () => {
  const cases: Array<[string, Record<string, unknown> | undefined, boolean]> = [
    ['no context', undefined, false],
    ['fingerprint without consent', { fingerprint }, false],
    ['consent: false', { fingerprint, consent: false }, false],
    ['consent: "true" (a string is not a grant)', { fingerprint, consent: 'true' }, false],
    ['consent.analytics only', { fingerprint, consent: { analytics: true } }, false],
    ['consent.fingerprinting: false', { fingerprint, consent: { fingerprinting: false, identity: false } }, false],
    ['consent: true', { fingerprint, consent: true }, true],
    ['consent.fingerprinting: true', { fingerprint, consent: { fingerprinting: true } }, true],
    ['consent.identity: true', { fingerprint, consent: { identity: true } }, true],
  ];
  it.each(cases)('%s', (_name, context, kept) => {
    const screened = screenContext(context, '203.0.113.5');
    expect(screened.ip_address).toBe('203.0.113.5');
    expect('fingerprint' in screened).toBe(kept);
  });

  it('replaces a client-sent ip_address and keeps everything else as sent', () => {
    const context = { ip_address: '1.1.1.1', page: { url: 'https://x.test/' }, gpc: true };
    expect(screenContext(context, '::1')).toEqual({ ip_address: '::1', page: { url: 'https://x.test/' }, gpc: true });
    expect(context.ip_address).toBe('1.1.1.1');
  });
});
