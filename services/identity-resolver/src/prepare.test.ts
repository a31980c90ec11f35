import { describe, expect, it } from '@jest/globals';
import type { RawEventEnvelope } from '@svc/contracts';
import { DEFAULT_IDENTITY_RULES, checkIdentityRules, compileIdentityRules } from '@svc/identity';
import { rawEnvelope } from '@svc/testkit';
import { prepareEvent } from './prepare';

const ORG = '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f';
const deep = (n: number): Record<string, unknown> => (n === 0 ? { leaf: 1 } : { n: deep(n - 1) });
const wide = Object.fromEntries(Array.from({ length: 301 }, (_, i) => [`k${i}`, i]));

describe('prepareEvent: the ingestion warnings of an event', () => {
  it.each<[string, RawEventEnvelope, Array<{ kind: string; detail: string | null }>]>([
    ['none', rawEnvelope(ORG, { type: 'identify', traits: { phone: '+44 20 7946 0958', email: 'a@b.io' } }), []],
    ['an unreadable phone (its value never in the warning)', rawEnvelope(ORG, { type: 'identify', traits: { phone: '12345' } }), [{ kind: 'unreadable_phone', detail: null }]],
    ['an unreadable phone in context.traits', rawEnvelope(ORG, { type: 'track', event: 'x', context: { traits: { phone: 'call me' } } }), [{ kind: 'unreadable_phone', detail: null }]],
    ['an empty phone is no phone', rawEnvelope(ORG, { type: 'identify', traits: { phone: '' } }), []],
    ['a clamped timestamp', { ...rawEnvelope(ORG, { type: 'track', event: 'x' }), originalTimestamp: '2099-01-01T00:00:00.000Z' }, [{ kind: 'timestamp_clamped', detail: '2099-01-01T00:00:00.000Z' }]],
    ['properties too deep', rawEnvelope(ORG, { type: 'track', event: 'x', properties: deep(9) }), [{ kind: 'soft_cap', detail: 'properties: too_deep' }]],
    ['traits with too many keys', rawEnvelope(ORG, { type: 'identify', traits: wide }), [{ kind: 'soft_cap', detail: 'traits: too_many_keys' }]],
    [
      'several at once',
      { ...rawEnvelope(ORG, { type: 'identify', traits: { phone: '1', ...wide }, properties: deep(9) }), originalTimestamp: '2099-01-01T00:00:00.000Z' },
      [
        { kind: 'unreadable_phone', detail: null },
        { kind: 'timestamp_clamped', detail: '2099-01-01T00:00:00.000Z' },
        { kind: 'soft_cap', detail: 'properties: too_deep' },
        { kind: 'soft_cap', detail: 'traits: too_many_keys' },
      ],
    ],
  ])('%s', (_, envelope, warnings) => {
    expect(prepareEvent(envelope, compileIdentityRules(DEFAULT_IDENTITY_RULES, 'GB')).warnings).toEqual(warnings);
  });
});

describe('prepareEvent: the organisation’s blocked values', () => {
  const check = checkIdentityRules({
    version: 1,
    blocked: [
      { type: 'email', value: 'support@acme.io' },
      { type: 'user_id', value: 'test-user' },
      { type: 'phone', value: '+44 20 7946 0958' },
    ],
  });
  if (!check.ok) throw new Error('invalid rules');
  const rules = compileIdentityRules(check.rules, 'GB');

  it('leaves blocked identifiers out of the identity, each a warning naming its type', () => {
    const e = prepareEvent(rawEnvelope(ORG, { type: 'identify', userId: 'test-user', traits: { email: 'Support@Acme.io', phone: '020 7946 0958' } }), rules);
    expect(e.identity).toMatchObject({ userId: null, email: null, phone: null });
    expect(e.warnings).toEqual([
      { kind: 'blocked_identifier', detail: 'user_id' },
      { kind: 'blocked_identifier', detail: 'email' },
      { kind: 'blocked_identifier', detail: 'phone' },
    ]);
  });

  it('blocks an alias previousId as a userId', () => {
    const e = prepareEvent(rawEnvelope(ORG, { type: 'alias', userId: 'u1', previousId: 'test-user' }), rules);
    expect(e.identity).toMatchObject({ userId: 'u1', previousId: null });
    expect(e.warnings).toEqual([{ kind: 'blocked_identifier', detail: 'previous_id' }]);
  });

  it('keeps what is not blocked', () => {
    const e = prepareEvent(rawEnvelope(ORG, { type: 'identify', userId: 'u1', traits: { email: 'alice@acme.io' } }), rules);
    expect(e.identity).toMatchObject({ userId: 'u1', email: 'alice@acme.io' });
    expect(e.warnings).toEqual([]);
  });
});
