import { ErrorCodes, Headers, Messages } from '@svc/contracts';
import { HttpError } from '@svc/runtime';
import type { RateLimitVerdict } from './rate-limiter';

/**
 * What a refused request is answered: the spec's 429 and the rate-limit
 * headers. Apart from admission (http.ts), so the failed-key throttle, which
 * admission consults, can answer the same without importing it back.
 */

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
