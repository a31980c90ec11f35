import type { IncomingMessage } from 'node:http';
import { clientIp, limitAddress } from '@svc/runtime';
import type { VerifiedKey } from '../accounts/store';
import { authenticate, type KeyRequirement, type KeyVerifier } from '../auth/authenticate';
import type { FailedAuthThrottle } from '../auth/failed-auth-throttle';
import type { RateLimitRule, RateLimiter } from './rate-limiter';
import { perIpRateLimited } from './responses';

/**
 * The per-(organisation, client IP) rule of an endpoint: its default limit,
 * tightened (never loosened) by the key's own per-minute cap. An IPv6 client
 * counts by its /64 (limitAddress).
 */
export function perOrgIpRule(endpoint: string, key: VerifiedKey, clientIp: string, defaultLimit: number): RateLimitRule {
  return {
    bucket: `${endpoint}:ip:${key.orgId}:${limitAddress(clientIp)}`,
    limit: Math.min(defaultLimit, key.ratePerMinuteCap ?? Infinity),
  };
}

/** What a route needs to admit a request: who can verify keys, where the counters live, which proxies to believe, who throttles failed keys. */
export interface AdmissionDeps {
  keys: KeyVerifier;
  rateLimiter: RateLimiter;
  trustedProxies: readonly string[];
  failedAuth: FailedAuthThrottle;
}

/**
 * The front door of a route with a per-(organisation, client IP) bucket, in
 * the spec's order: authentication (key type and allowlists), then the
 * bucket's limit tightened by the key's cap (429 `rate_limited`). Returns the
 * key and the client address it was judged by.
 */
export async function admit(
  req: IncomingMessage,
  deps: AdmissionDeps,
  requirement: KeyRequirement,
  bucket: { endpoint: string; limit: number },
): Promise<{ key: VerifiedKey; ip: string }> {
  const ip = clientIp(req, deps.trustedProxies);
  const key = await authenticate({ headers: req.headers, clientIp: ip }, deps.keys, requirement, { throttle: deps.failedAuth });
  const [verdict] = await deps.rateLimiter.hit([perOrgIpRule(bucket.endpoint, key, ip, bucket.limit)]);
  if (verdict && !verdict.allowed) throw perIpRateLimited(verdict);
  return { key, ip };
}
