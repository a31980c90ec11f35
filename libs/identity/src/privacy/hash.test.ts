import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { eventIdentity } from '../signals';
import { IdentifierHashes, eventIdentifierHashes, normaliseIdentifier, parseStoredHash } from './hash';

const orgA = '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f';
const orgB = '0b7e4c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b';
const [k1, k2, k3] = [randomBytes(32), randomBytes(32), randomBytes(32)];
const base = (org: string, type: string, value: string) => createHash('sha256').update(`${org}\u0000${type}\u0000${value}`).digest('hex');
const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest('hex');

describe('identifier hashes', () => {
  it('are HMAC-SHA256 layers over SHA-256 of organisation, type and value, one per key, marked with their count', () => {
    const b = base(orgA, 'email', 'ann@example.com');
    expect(new IdentifierHashes([k1]).of(orgA, 'email', 'ann@example.com')).toBe(`k1.${hmac(k1, b)}`);
    expect(new IdentifierHashes([k1, k2]).of(orgA, 'email', 'ann@example.com')).toBe(`k2.${hmac(k2, hmac(k1, b))}`);
    expect(new IdentifierHashes([k1]).of(orgA, 'fbclid', 'IwAR1')).toBe(`k1.${hmac(k1, base(orgA, 'fbclid', 'IwAR1'))}`);
    // Without the key, hashing a candidate value does not find it: the plain SHA-256 is nowhere in the stored form.
    expect(new IdentifierHashes([k1]).of(orgA, 'email', 'ann@example.com')).not.toContain(b);
    expect(new IdentifierHashes([k1]).of(orgA, 'email', 'ann@example.com')).not.toBe(new IdentifierHashes([k2]).of(orgA, 'email', 'ann@example.com'));
  });

  it('go on a tombstone as bare hex (the topic\'s schema), the same hash without its prefix', () => {
    const two = new IdentifierHashes([k1, k2]);
    expect(two.published(orgA, 'user_id', 'u-1')).toBe(two.of(orgA, 'user_id', 'u-1').slice('k2.'.length));
    expect(two.published(orgA, 'user_id', 'u-1')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('differ between organisations and between identifier types of one value', () => {
    const hashes = new IdentifierHashes([k1]);
    expect(hashes.of(orgA, 'user_id', 'u-1')).not.toBe(hashes.of(orgB, 'user_id', 'u-1'));
    expect(hashes.of(orgA, 'user_id', 'u-1')).not.toBe(hashes.of(orgA, 'anonymous_id', 'u-1'));
  });

  it('are brought under a new key without the value, and are found in either form meanwhile', () => {
    const b = base(orgA, 'phone', '+442079460958');
    const [none, one, two, three] = [b, new IdentifierHashes([k1]), new IdentifierHashes([k1, k2]), new IdentifierHashes([k1, k2, k3])];
    const value = ['phone', '+442079460958'] as const;
    // From an unkeyed row (before keyed hashes), and from each earlier key.
    expect(one.rewrap(none)).toBe(one.of(orgA, ...value));
    expect(two.rewrap(none)).toBe(two.of(orgA, ...value));
    expect(three.rewrap(one.of(orgA, ...value))).toBe(three.of(orgA, ...value));
    expect(two.rewrap(two.of(orgA, ...value))).toBe(two.of(orgA, ...value));
    // A hash with more layers than this process has keys, or not a hash at all: left alone.
    expect(one.rewrap(two.of(orgA, ...value))).toBeUndefined();
    for (const other of ['0b0e9f36-8f53-4b7a-9d2c-5e1f0a7b6c3d', `k0.${b}`, b.slice(1), `k1.${b}x`, 'done']) expect(one.rewrap(other)).toBeUndefined();
    expect(one.lookups(orgA, ...value)).toEqual([one.of(orgA, ...value), none]);
    expect(three.lookups(orgA, ...value)).toEqual([three.of(orgA, ...value), two.of(orgA, ...value)]);
  });

  it('parse back to their layer count and hex for any value (property)', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 4 }), (value, n) => {
        const hashes = new IdentifierHashes([k1, k2, k3, randomBytes(32)].slice(0, n));
        const stored = hashes.of(orgA, 'user_id', value);
        expect(parseStoredHash(stored)?.layers).toBe(n);
        expect(hashes.rewrap(stored)).toBe(stored);
        expect(hashes.rewrap(base(orgA, 'user_id', value))).toBe(stored);
      }),
    );
  });

  it('need at least one key', () => {
    expect(() => new IdentifierHashes([])).toThrow('identifier hashes need at least one key (IDENTIFIER_HASH_KEYS)');
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

  it("cover every identifier an event carries, in both forms, an alias's previousId as both a user id and an anonymous id", () => {
    const hashes = new IdentifierHashes([k1, k2]);
    const identity = eventIdentity({
      type: 'alias',
      messageId: 'm',
      anonymousId: 'anon-1',
      userId: 'u-1',
      previousId: 'old-1',
      timestamp: '2026-11-20T10:00:00Z',
      context: { traits: { email: 'Ann@Example.com', phone: '+44 20 7946 0958' } },
    });
    const found = eventIdentifierHashes(hashes, orgA, identity);
    const both = (type: 'anonymous_id' | 'user_id' | 'email' | 'phone', value: string) => hashes.lookups(orgA, type, value).map((hash) => ({ type, hash }));
    expect(found).toEqual(
      expect.arrayContaining([
        ...both('anonymous_id', 'anon-1'),
        ...both('user_id', 'u-1'),
        ...both('email', 'ann@example.com'),
        ...both('phone', '+442079460958'),
        ...both('user_id', 'old-1'),
        ...both('anonymous_id', 'old-1'),
      ]),
    );
    expect(found).toHaveLength(12);
    expect(eventIdentifierHashes(hashes, orgA, eventIdentity({ type: 'page', messageId: 'm', anonymousId: 'anon-1', timestamp: '2026-11-20T10:00:00Z' }))).toHaveLength(2);
  });
});
