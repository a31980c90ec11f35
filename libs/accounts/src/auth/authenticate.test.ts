import { describe, expect, it } from '@jest/globals';
import { ErrorCodes, Messages } from '@svc/contracts';
import { HttpError } from '@svc/runtime';
import { verifiedKey } from '@svc/testkit';
import type { VerifiedKey } from '../accounts/store';
import { KeyRequirements, authenticate, type KeyRequirement, type KeyVerifier } from './authenticate';

const KEY = 'uk_live_' + 'a'.repeat(40);

function verifierWith(overrides: Partial<VerifiedKey> = {}): KeyVerifier {
  return {
    verifyApiKey: async (key) => (key === KEY ? verifiedKey({ keyId: 'k1', orgId: 'o1', ...overrides }) : undefined),
  };
}

async function outcome(
  headers: Record<string, string>,
  verifier: KeyVerifier = verifierWith(),
  requirement: KeyRequirement = KeyRequirements.write,
  clientIp = '203.0.113.9',
) {
  try {
    const key = await authenticate({ headers, clientIp }, verifier, requirement);
    return { ok: key.keyId };
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    return { status: err.status, error: err.message, code: err.code };
  }
}

describe('authenticate', () => {
  const failures: Array<[string, Record<string, string>, number, string]> = [
    ['no header', {}, 401, Messages.missingAuthorization],
    ['empty header', { authorization: '' }, 401, Messages.missingAuthorization],
    ['basic scheme', { authorization: 'Basic abc' }, 401, Messages.invalidAuthorizationFormat],
    ['key without scheme', { authorization: KEY }, 401, Messages.invalidAuthorizationFormat],
    ['bearer without key', { authorization: 'Bearer' }, 401, Messages.emptyApiKey],
    ['bearer with blanks', { authorization: 'Bearer    ' }, 401, Messages.emptyApiKey],
    ['unknown key', { authorization: 'Bearer uk_live_' + 'b'.repeat(40) }, 401, Messages.invalidApiKey],
    ['junk key', { authorization: 'Bearer hello' }, 401, Messages.invalidApiKey],
  ];
  it.each(failures)('%s → %i %s', async (_name, headers, status, error) => {
    expect(await outcome(headers)).toMatchObject({ status, error });
  });

  it('accepts a lower-case scheme', async () => {
    expect(await outcome({ authorization: `bearer ${KEY}` })).toEqual({ ok: 'k1' });
  });

  it('answers 500 Authentication failed when verification throws', async () => {
    const broken: KeyVerifier = { verifyApiKey: async () => Promise.reject(new Error('connection refused')) };
    expect(await outcome({ authorization: `Bearer ${KEY}` }, broken)).toEqual({ status: 500, error: Messages.authenticationFailed, code: undefined });
  });

  const types: Array<[string, 'write' | 'read' | 'admin', keyof typeof KeyRequirements, string | null]> = [
    ['write key on a write route', 'write', 'write', null],
    ['admin key on a write route', 'admin', 'write', null],
    ['read key on a write route', 'read', 'write', 'Insufficient permissions: this operation requires a write or admin key'],
    ['write key on a read route', 'write', 'read', 'Insufficient permissions: this operation requires a read or admin key'],
    ['read key on an admin route', 'read', 'admin', 'Insufficient permissions: this operation requires an admin key'],
    ['admin key on an admin route', 'admin', 'admin', null],
  ];
  it.each(types)('%s', async (_name, type, route, error) => {
    const result = await outcome({ authorization: `Bearer ${KEY}` }, verifierWith({ type }), KeyRequirements[route]);
    expect(result).toEqual(error ? { status: 403, error, code: undefined } : { ok: 'k1' });
  });

  const allowlists: Array<[string, Partial<VerifiedKey>, Record<string, string>, string, string | null]> = [
    ['IP inside the allowlist', { ipAllowlist: ['203.0.113.0/24'] }, {}, '203.0.113.9', null],
    ['IPv4-mapped IPv6 inside', { ipAllowlist: ['203.0.113.0/24'] }, {}, '::ffff:203.0.113.9', null],
    ['IP outside the allowlist', { ipAllowlist: ['198.51.100.0/24'] }, {}, '203.0.113.9', ErrorCodes.ipNotAllowed],
    ['allowed origin', { originAllowlist: ['https://shop.example.com'] }, { origin: 'https://shop.example.com' }, '1.2.3.4', null],
    ['allowed origin, other case', { originAllowlist: ['https://shop.example.com'] }, { origin: 'https://SHOP.example.com' }, '1.2.3.4', null],
    ['other origin', { originAllowlist: ['https://shop.example.com'] }, { origin: 'https://evil.example' }, '1.2.3.4', ErrorCodes.originNotAllowed],
    ['no origin (server to server)', { originAllowlist: ['https://shop.example.com'] }, {}, '1.2.3.4', null],
  ];
  it.each(allowlists)('%s', async (_name, key, headers, ip, code) => {
    const result = await outcome({ authorization: `Bearer ${KEY}`, ...headers }, verifierWith(key), KeyRequirements.write, ip);
    expect(result).toEqual(code ? { status: 403, error: expect.any(String), code } : { ok: 'k1' });
  });
});

describe('authenticate with a key a cache served', () => {
  const base = verifiedKey({ keyId: 'k1', orgId: 'o1' });
  const unconfirmed = { sql: 'select 1', bindings: [] };
  /** Serves `held` (unconfirmed) unless asked for a fresh read, which answers `current`; records each read. */
  function cached(held: Partial<VerifiedKey>, current: Partial<VerifiedKey> | undefined) {
    const reads: string[] = [];
    const verifier: KeyVerifier = {
      verifyApiKey: async (_key, options) => {
        reads.push(options?.fresh ? 'fresh' : 'held');
        if (options?.fresh) return current && { ...base, ...current };
        return { ...base, ...held, unconfirmed };
      },
    };
    return { verifier, reads };
  }

  const cases: Array<[string, Partial<VerifiedKey>, Partial<VerifiedKey> | undefined, string[], { status: number; error: string } | 'ok']> = [
    ['held and allowed: used as held, no read', {}, {}, ['held'], 'ok'],
    ['held as a read key, still one: refused after a fresh read', { type: 'read' }, { type: 'read' }, ['held', 'fresh'], { status: 403, error: Messages.insufficientPermissions('write or admin') }],
    ['held as a read key, now a write key: allowed after a fresh read', { type: 'read' }, {}, ['held', 'fresh'], 'ok'],
    ['held outside its IP allowlist, revoked since: 401, not 403', { ipAllowlist: ['198.51.100.0/24'] }, undefined, ['held', 'fresh'], { status: 401, error: Messages.invalidApiKey }],
  ];
  it.each(cases)('%s', async (_name, held, current, expectedReads, expected) => {
    const { verifier, reads } = cached(held, current);
    let result: { status: number; error: string } | 'ok';
    try {
      await authenticate({ headers: { authorization: `Bearer ${KEY}` }, clientIp: '203.0.113.9' }, verifier, KeyRequirements.write);
      result = 'ok';
    } catch (err) {
      result = { status: (err as HttpError).status, error: (err as HttpError).message };
    }
    expect(result).toEqual(expected);
    expect(reads).toEqual(expectedReads);
  });

  it('fresh: reads from the database whatever is held', async () => {
    const { verifier, reads } = cached({}, {});
    const key = await authenticate({ headers: { authorization: `Bearer ${KEY}` }, clientIp: '203.0.113.9' }, verifier, KeyRequirements.write, { fresh: true });
    expect(reads).toEqual(['fresh']);
    expect(key.unconfirmed).toBeUndefined();
  });
});
