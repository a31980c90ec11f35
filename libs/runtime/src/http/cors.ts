import type { RequestHandler } from 'express';
import { Headers } from '@svc/contracts';

/** Response headers browser code may read (quota and rate-limit state, request id). */
export const CORS_EXPOSED_HEADERS = [
  Headers.requestId,
  Headers.apiVersion,
  Headers.quotaStatus,
  Headers.retryAfter,
  Headers.rateLimitLimit,
  Headers.rateLimitRemaining,
].join(', ');

export const CORS_ALLOWED_METHODS = 'GET, POST, OPTIONS';
export const CORS_ALLOWED_HEADERS = ['Content-Type', 'Authorization', Headers.requestId].join(', ');
/** One day: the preflight answer never varies, so let browsers cache it. */
export const CORS_MAX_AGE_SECONDS = 86_400;

/**
 * Any origin may call the API (the write key is meant for browsers; per-key Origin
 * allowlists are enforced by authentication, not by CORS). Every OPTIONS request is
 * answered here as a preflight, before routing, so it never reaches auth or a 405.
 */
export function cors(): RequestHandler {
  return (req, res, next) => {
    // Allow-Origin and Expose-Headers are among the common headers, set before this runs.
    if (req.method !== 'OPTIONS') {
      next();
      return;
    }
    res.setHeader('Access-Control-Allow-Methods', CORS_ALLOWED_METHODS);
    res.setHeader('Access-Control-Allow-Headers', CORS_ALLOWED_HEADERS);
    res.setHeader('Access-Control-Max-Age', String(CORS_MAX_AGE_SECONDS));
    res.status(204).end();
  };
}
