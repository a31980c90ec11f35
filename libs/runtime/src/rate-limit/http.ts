import { ErrorCodes, Headers, Messages } from '@svc/contracts';
import { HttpError } from '../http';
import type { VerifiedKey } from '../accounts/store';
import type { RateLimitRule, RateLimitVerdict } from './rate-limiter';

/**
 * The per-(organisation, client IP) rule of an endpoint: its default limit,
 * tightened (never loosened) by the key's own per-minute cap.
 */
export function perOrgIpRule(endpoint: string, key: VerifiedKey, clientIp: string, defaultLimit: number): RateLimitRule {
  return {
    bucket: `${endpoint}:ip:${key.orgId}:${clientIp}`,
    limit: Math.min(defaultLimit, key.ratePerMinuteCap ?? Infinity),
  };
}

/** Retry-After (seconds to the window's end), X-RateLimit-Limit and X-RateLimit-Remaining. */
export function rateLimitHeaders(v: RateLimitVerdict): Record<string, string> {
  return {
    [Headers.retryAfter]: String(v.retryAfterSeconds),
    [Headers.rateLimitLimit]: String(v.rule.limit),
    [Headers.rateLimitRemaining]: String(v.remaining),
  };
}

/** The spec's per-IP 429: `code: rate_limited` and the rate-limit headers. */
export function perIpRateLimited(v: RateLimitVerdict): HttpError {
  return new HttpError(429, Messages.rateLimitedPerIp(v.rule.limit), {
    code: ErrorCodes.rateLimited,
    headers: rateLimitHeaders(v),
  });
}
