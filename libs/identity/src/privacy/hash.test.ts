import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { eventIdentity } from '../signals';
import { clickIdHash, eventIdentifierHashes, identifierHash, normaliseIdentifier } from './hash';

const orgA = '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f';
const orgB = '0b7e4c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b';

describe('suppression hashes', () => {
  it('are SHA-256 hex of organisation, type and value, so downstream teams can compute them', () => {
    expect(identifierHash(orgA, 'email', 'ann@example.com')).toBe(createHash('sha256').update(`${orgA}\u0000email\u0000ann@example.com`).digest('hex'));
    expect(clickIdHash(orgA, 'fbclid', 'IwAR1')).toBe(createHash('sha256').update(`${orgA}\u0000fbclid\u0000IwAR1`).digest('hex'));
  });

  it('differ between organisations and between identifier types of one value', () => {
    expect(identifierHash(orgA, 'user_id', 'u-1')).not.toBe(identifierHash(orgB, 'user_id', 'u-1'));
    expect(identifierHash(orgA, 'user_id', 'u-1')).not.toBe(identifierHash(orgA, 'anonymous_id', 'u-1'));
  });

  it.each([
    ['email', '  Ann@Example.COM ', 'ann@example.com'],
    ['email', 'not an email', null],
    ['phone', '098765 43210', '+919876543210'],
    ['phone', '+44 20 7946 0958', '+442079460958'],
    ['phone', 'call me', null],
    ['user_id', 'u-1', 'u-1'],
    ['user_id', '', null],
    ['anonymous_id', 'a'.repeat(201), null],
    ['anonymous_id', 'nul\u0000', null],
  ] as const)('normalise %s %j as the resolver does: %j', (type, raw, expected) => {
    expect(normaliseIdentifier(type, raw)).toBe(expected);
  });

  it("cover every identifier an event carries, an alias's previousId as both a user id and an anonymous id", () => {
    const identity = eventIdentity({
      type: 'alias',
      messageId: 'm',
      anonymousId: 'anon-1',
      userId: 'u-1',
      previousId: 'old-1',
      timestamp: '2026-11-20T10:00:00Z',
      context: { traits: { email: 'Ann@Example.com', phone: '+44 20 7946 0958' } },
    });
    const hashes = eventIdentifierHashes(orgA, identity);
    expect(hashes).toEqual(
      expect.arrayContaining([
        { type: 'anonymous_id', hash: identifierHash(orgA, 'anonymous_id', 'anon-1') },
        { type: 'user_id', hash: identifierHash(orgA, 'user_id', 'u-1') },
        { type: 'email', hash: identifierHash(orgA, 'email', 'ann@example.com') },
        { type: 'phone', hash: identifierHash(orgA, 'phone', '+442079460958') },
        { type: 'user_id', hash: identifierHash(orgA, 'user_id', 'old-1') },
        { type: 'anonymous_id', hash: identifierHash(orgA, 'anonymous_id', 'old-1') },
      ]),
    );
    expect(hashes).toHaveLength(6);
    expect(eventIdentifierHashes(orgA, eventIdentity({ type: 'page', messageId: 'm', anonymousId: 'anon-1', timestamp: '2026-11-20T10:00:00Z' }))).toHaveLength(1);
  });
});
