import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { ErrorCodes, Headers, Messages } from '@svc/contracts';
import { verifiedKey } from '@svc/testkit';
import { HttpError, limitAddress } from '@svc/runtime';
import { KeyRequirements, authenticate, type KeyVerifier } from './authenticate';
import { FailedAuthThrottle } from './failed-auth-throttle';

const GOOD = 'uk_live_' + 'a'.repeat(40);
const UNKNOWN = 'uk_live_' + 'b'.repeat(40);

/** A verifier that counts its lookups (each one a database read) and holds GOOD once it has verified it. */
function countingVerifier(): KeyVerifier & { lookups: number } {
  const held = new Set<string>();
  const verifier = {
    lookups: 0,
    verifyApiKey: async (key: string) => {
      verifier.lookups += 1;
      if (key !== GOOD) return undefined;
      held.add(key);
      return verifiedKey({ keyId: 'k1', orgId: 'o1' });
    },
    holds: (key: string) => held.has(key),
  };
  return verifier;
}

async function attempt(key: string, ip: string, verifier: KeyVerifier, throttle: FailedAuthThrottle): Promise<number> {
  try {
    await authenticate({ headers: { authorization: `Bearer ${key}` }, clientIp: ip }, verifier, KeyRequirements.write, { throttle });
    return 200;
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    return err.status;
  }
}

describe('FailedAuthThrottle with authenticate', () => {
  it('past its limit, an address gets the per-IP 429 without its key being looked up', async () => {
    const verifier = countingVerifier();
    const throttle = new FailedAuthThrottle(3);
    const statuses = [];
    for (let i = 0; i < 6; i += 1) statuses.push(await attempt(UNKNOWN, '203.0.113.9', verifier, throttle));
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429]);
    expect(verifier.lookups).toBe(3);
  });

  it('answers the 429 in the API\'s shape: rate_limited, Retry-After and the limit it applied', () => {
    const throttle = new FailedAuthThrottle(2, { now: () => 15_000 });
    throttle.failed('203.0.113.9');
    expect(throttle.refusal('203.0.113.9')).toBeUndefined();
    throttle.failed('203.0.113.9');
    const refusal = throttle.refusal('203.0.113.9')!;
    expect({ status: refusal.status, message: refusal.message, code: refusal.code, headers: refusal.headers }).toEqual({
      status: 429,
      message: Messages.rateLimitedPerIp(2),
      code: ErrorCodes.rateLimited,
      headers: { [Headers.retryAfter]: '60', [Headers.rateLimitLimit]: '2', [Headers.rateLimitRemaining]: '0' },
    });
  });

  it('a key this process holds as verified still works from a throttled address; one it does not hold is refused', async () => {
    const verifier = countingVerifier();
    const throttle = new FailedAuthThrottle(2);
    expect(await attempt(GOOD, '203.0.113.9', verifier, throttle)).toBe(200);
    for (let i = 0; i < 2; i += 1) await attempt(UNKNOWN, '203.0.113.9', verifier, throttle);
    expect(await attempt(UNKNOWN, '203.0.113.9', verifier, throttle)).toBe(429);
    expect(await attempt(GOOD, '203.0.113.9', verifier, throttle)).toBe(200);
  });

  it('counts a missing or malformed header too, and never a key that verified', async () => {
    const verifier = countingVerifier();
    const throttle = new FailedAuthThrottle(2);
    for (const headers of [{}, { authorization: 'Basic x' }]) {
      await authenticate({ headers, clientIp: '198.51.100.1' }, verifier, KeyRequirements.write, { throttle }).catch(() => undefined);
    }
    expect(throttle.refusal('198.51.100.1')?.status).toBe(429);
    for (let i = 0; i < 5; i += 1) expect(await attempt(GOOD, '198.51.100.2', verifier, throttle)).toBe(200);
    expect(throttle.refusal('198.51.100.2')).toBeUndefined();
  });

  it('other addresses are not affected, and a new minute starts every address afresh', () => {
    let now = 0;
    const throttle = new FailedAuthThrottle(1, { now: () => now });
    throttle.failed('203.0.113.9');
    expect(throttle.refusal('203.0.113.9')?.status).toBe(429);
    expect(throttle.refusal('203.0.113.10')).toBeUndefined();
    now = 59_999;
    expect(throttle.refusal('203.0.113.9')?.status).toBe(429);
    now = 60_000;
    expect(throttle.refusal('203.0.113.9')).toBeUndefined();
  });

  it('an IPv6 client rotating through its /64 shares one count; the next /64 does not', () => {
    const throttle = new FailedAuthThrottle(2);
    throttle.failed('2001:db8:1:2::1');
    throttle.failed('2001:db8:1:2:ffff:ffff:ffff:fffe');
    expect(throttle.refusal('2001:db8:1:2:abcd::9')?.status).toBe(429);
    expect(throttle.refusal('2001:db8:1:3::1')).toBeUndefined();
  });

  it('holds at most maxAddresses: past it, new addresses are neither counted nor refused', () => {
    const throttle = new FailedAuthThrottle(1, { maxAddresses: 2 });
    for (const ip of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) throttle.failed(ip);
    expect(['192.0.2.1', '192.0.2.2', '192.0.2.3'].map((ip) => throttle.refusal(ip)?.status)).toEqual([429, 429, undefined]);
  });

  it('counts every refusal for the metric', () => {
    let refused = 0;
    const throttle = new FailedAuthThrottle(1, { onRefused: () => (refused += 1) });
    throttle.failed('192.0.2.1');
    throttle.refusal('192.0.2.1');
    throttle.refusal('192.0.2.1');
    throttle.refusal('192.0.2.2');
    expect(refused).toBe(2);
  });
});

describe('limitAddress', () => {
  it.each([
    ['203.0.113.9', '203.0.113.9'],
    ['::ffff:203.0.113.9', '203.0.113.9'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:DB8:1:2::', '2001:db8:1:2::/64'],
    ['::1', '::/64'],
    ['', ''],
    ['not an address', 'not an address'],
  ])('%s counts as %s', (ip, bucket) => {
    expect(limitAddress(ip)).toBe(bucket);
  });

  it('every address of one /64 counts as the same bucket, and no two /64s share one', () => {
    const hextet = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
    fc.assert(
      fc.property(fc.array(hextet, { minLength: 8, maxLength: 8 }), fc.array(hextet, { minLength: 4, maxLength: 4 }), (address, host) => {
        const sameNetwork = [...address.slice(0, 4), ...host];
        expect(limitAddress(address.join(':'))).toBe(limitAddress(sameNetwork.join(':')));
        const otherNetwork = [...address.slice(0, 3), (parseInt(address[3]!, 16) ^ 1).toString(16), ...address.slice(4)];
        expect(limitAddress(otherNetwork.join(':'))).not.toBe(limitAddress(address.join(':')));
      }),
    );
  });
});
