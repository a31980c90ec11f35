import { describe, expect, it } from '@jest/globals';
import { ConsentDecisionSchema, checkConsentDecision } from './consent';
import { validatorFor } from './schema-validator';

const ok = { anonymousId: 'anon_1', purposes: { analytics: true } };

describe('checkConsentDecision', () => {
  const bad: Array<[string, unknown, string]> = [
    ['not an object', [ok], 'Invalid consent: the body must be a JSON object'],
    ['no subject', { purposes: { analytics: true } }, 'Invalid consent: anonymousId is required'],
    ['junk subject', { ...ok, anonymousId: 'undefined' }, 'Invalid consent: anonymousId must be a real visitor id of at most 200 characters'],
    ['numeric subject', { ...ok, anonymousId: 7 }, 'Invalid consent: anonymousId must be a real visitor id of at most 200 characters'],
    ['junk userId', { ...ok, userId: 'null' }, 'Invalid consent: userId must be a real user id of at most 200 characters'],
    ['no purposes', { anonymousId: 'a' }, 'Invalid consent: purposes must map at least one of analytics, fingerprinting, identity to true or false'],
    ['empty purposes', { ...ok, purposes: {} }, 'Invalid consent: purposes must map at least one of analytics, fingerprinting, identity to true or false'],
    ['purposes as list', { ...ok, purposes: ['analytics'] }, 'Invalid consent: purposes must map at least one of analytics, fingerprinting, identity to true or false'],
    ['unknown purpose', { ...ok, purposes: { marketing: true } }, 'Invalid consent: unknown purpose "marketing" (known: analytics, fingerprinting, identity)'],
    ['string grant', { ...ok, purposes: { analytics: 'yes' } }, 'Invalid consent: purposes.analytics must be true or false'],
    ['empty source', { ...ok, source: '' }, 'Invalid consent: source must be a string of 1 to 64 characters'],
    ['numeric source', { ...ok, source: 1 }, 'Invalid consent: source must be a string of 1 to 64 characters'],
    ['bad timestamp', { ...ok, timestamp: 'now' }, 'Invalid consent: timestamp must be an ISO 8601 date-time'],
  ];
  it.each(bad)('%s', (_name, body, message) => {
    expect(checkConsentDecision(body)).toEqual({ ok: false, message });
    // Identifier screening (the junk denylist) is code-only, like for events.
    if (!/junk/.test(_name)) expect(validatorFor(ConsentDecisionSchema)(body)).toBe(false);
  });

  it('accepts a single purpose', () => {
    expect(checkConsentDecision(ok).ok).toBe(true);
    expect(validatorFor(ConsentDecisionSchema)(ok)).toBe(true);
  });

  it('accepts a full decision and agrees with the schema', () => {
    const body = { anonymousId: 'anon_1', userId: 'u1', purposes: { analytics: false, fingerprinting: true, identity: true }, source: 'banner', timestamp: '2026-11-21T10:00:00Z' };
    expect(checkConsentDecision(body)).toEqual({ ok: true, decision: body });
    expect(validatorFor(ConsentDecisionSchema)(body)).toBe(true);
  });
});
