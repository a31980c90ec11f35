/**
 * Accounts: the organisations and API keys of the `accounts` schema (their
 * monthly usage included), authenticating a request's key, the throttle on
 * failed authentications, and the rate limits of the `ratelimit` schema.
 * Built on libs/runtime's plumbing (database, HTTP errors, metrics, client
 * addresses); nothing in libs/runtime depends on it.
 */
export { KEY_TYPES, parseAuthorization, type KeyType } from './accounts/api-keys';
export { AccountsStore, PLAN_STATES, type PlanState, type VerifiedKey } from './accounts/store';
export { accountsMigrations } from './accounts/migrations';
export { authenticate, KeyRequirements, type KeyVerifier } from './auth/authenticate';
export { KeyCache } from './auth/key-cache';
export { FailedAuthThrottle, failedAuthThrottle, type FailedAuthThrottleOptions } from './auth/failed-auth-throttle';
export { InProcessRateLimiter, PostgresRateLimiter, type RateLimiter, type RateLimitRule, type RateLimitVerdict } from './rate-limit/rate-limiter';
export { rateLimitMigrations } from './rate-limit/migrations';
export { admit, perOrgIpRule, type AdmissionDeps } from './rate-limit/http';
export { perIpRateLimited, rateLimitHeaders } from './rate-limit/responses';
