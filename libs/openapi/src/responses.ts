import {
  BodyLimitHints,
  BodyTooLargeSchema,
  ErrorCodes,
  ErrorEnvelopeSchema,
  Headers,
  Limits,
  Messages,
  PerOrgRateLimitedSchema,
  QuotaPausedSchema,
  type RequiredKeyType,
} from '@svc/contracts';
import type { TSchema } from '@sinclair/typebox';
import type { Json } from './json-schema';

/** An example body of a response or request: its name in the document, a summary and the value. */
export interface Example {
  name: string;
  summary: string;
  value: Json;
}

/** One documented status of an operation: one body schema (or a choice of several) and its examples. */
export interface ResponseSpec {
  description: string;
  schemas: TSchema[];
  examples: Example[];
  /** Extra response headers by name, e.g. Retry-After. */
  headers?: string[];
}

const envelope = (error: string, code?: string): Json => ({ success: false, error, ...(code ? { code } : {}) });
const named = (name: string, summary: string, value: Json): Example => ({ name, summary, value });
const errorResponse = (description: string, examples: Example[], headers?: string[]): ResponseSpec => ({
  description,
  schemas: [ErrorEnvelopeSchema],
  examples,
  ...(headers ? { headers } : {}),
});

/** 401: every way authentication fails before the key's type is known (the spec's exact messages). */
export const unauthorized = (): ResponseSpec =>
  errorResponse('Missing, malformed, empty, unknown or revoked key', [
    named('missing', 'No Authorization header', envelope(Messages.missingAuthorization)),
    named('format', 'Not `Bearer <api_key>`', envelope(Messages.invalidAuthorizationFormat)),
    named('empty', 'Bearer with no key', envelope(Messages.emptyApiKey)),
    named('invalid', 'Unknown, revoked or rotated key', envelope(Messages.invalidApiKey)),
  ]);

/** 401 of the Segment-compatible routes: the key may also come as the Basic-auth user or in the body. */
export const unauthorizedWriteKey = (): ResponseSpec =>
  errorResponse('No write key, or one that is malformed, empty, unknown or revoked', [
    named('missing', 'No Authorization header and no writeKey in the body', envelope(Messages.writeKeyMissing)),
    named('format', 'Neither Basic nor Bearer', envelope(Messages.invalidWriteKeyAuthorizationFormat)),
    named('empty', 'An empty key', envelope(Messages.emptyApiKey)),
    named('invalid', 'Unknown, revoked or rotated key', envelope(Messages.invalidApiKey)),
  ]);

/** 403: a key of the wrong type, an allowlist mismatch, or plain HTTP where HTTPS is required. */
export const forbidden = (required: RequiredKeyType, allowlists = true): ResponseSpec =>
  errorResponse('Wrong key type, allowlist mismatch, or plain HTTP where HTTPS is required', [
    named('wrong_type', 'A valid key of another type', envelope(Messages.insufficientPermissions(required))),
    ...(allowlists
      ? [
          named('ip', 'Client IP not on the key’s allowlist', envelope(Messages.ipNotAllowed, ErrorCodes.ipNotAllowed)),
          named('origin', 'Origin not on the key’s allowlist', envelope(Messages.originNotAllowed, ErrorCodes.originNotAllowed)),
        ]
      : []),
    named('https', 'REQUIRE_HTTPS and the request came over plain HTTP', envelope(Messages.httpsRequired, 'https_required')),
  ]);

export const badRequest = (description: string, examples: Array<[name: string, summary: string, message: string]>): ResponseSpec =>
  errorResponse(
    description,
    examples.map(([name, summary, message]) => named(name, summary, envelope(message))),
  );

export const notFound = (examples: Array<[name: string, summary: string, message: string]>): ResponseSpec =>
  errorResponse('No such route or resource in the caller’s organisation', examples.map(([name, summary, message]) => named(name, summary, envelope(message))));

/** 413 with `limit_bytes` and the hint for that limit. */
export const payloadTooLarge = (limitBytes: number, hint: string): ResponseSpec => ({
  description: 'Request body too large (checked on Content-Length, then while reading)',
  schemas: [BodyTooLargeSchema],
  examples: [named('too_large', 'Over the limit', { success: false, error: Messages.bodyTooLarge(limitBytes), limit_bytes: limitBytes, hint })],
});
export const batchTooLarge = (): ResponseSpec => payloadTooLarge(Limits.batchBodyBytes, BodyLimitHints.batch);
export const smallBodyTooLarge = (): ResponseSpec => payloadTooLarge(Limits.smallBodyBytes, BodyLimitHints.generic);

const RATE_HEADERS = [Headers.retryAfter, Headers.rateLimitLimit, Headers.rateLimitRemaining];

/** 429 of an endpoint with only the per-(organisation, IP) limit. */
export const rateLimited = (perMinute: number): ResponseSpec =>
  errorResponse('Rate limit hit', [named('per_ip', `Over ${perMinute} requests per minute per (organisation, IP)`, envelope(Messages.rateLimitedPerIp(perMinute), ErrorCodes.rateLimited))], RATE_HEADERS);

/** 429 of ingestion: per IP, per organisation (only `error`), and the plan's two. */
export const ingestionRateLimited = (): ResponseSpec => ({
  description: 'Rate limit or plan quota. Retry after Retry-After; the plan 429s need a plan change first',
  schemas: [ErrorEnvelopeSchema, PerOrgRateLimitedSchema, QuotaPausedSchema],
  examples: [
    named('per_ip', 'Over 100 requests per minute per (organisation, IP)', envelope(Messages.rateLimitedPerIp(Limits.rate.batchPerOrgIp), ErrorCodes.rateLimited)),
    named('per_org', 'Over 2000 requests per minute for the organisation', { error: Messages.rateLimitedPerOrg(Limits.rate.batchPerOrg) }),
    named('paused', 'Ingestion paused (Retry-After: 86400)', { success: false, error: Messages.quotaPaused, upgrade_url: 'https://dashboard.example.com/billing' }),
    named('monthly', 'Monthly event limit reached (no Retry-After)', envelope(Messages.monthlyLimitReached)),
  ],
  headers: RATE_HEADERS,
});

export const internalError = (authenticates = true): ResponseSpec =>
  errorResponse('Unexpected server error', [
    named('internal', 'Anything unexpected; no detail is ever returned', envelope(Messages.internalError)),
    ...(authenticates ? [named('auth', 'The key could not be checked', envelope(Messages.authenticationFailed))] : []),
  ]);

export const unavailable = (withUsage = false): ResponseSpec =>
  errorResponse(
    'Transient backend issue; retry after Retry-After',
    [
      named('unavailable', 'The log or database cannot be reached', envelope(Messages.serviceUnavailable)),
      ...(withUsage ? [named('usage', 'The monthly usage could not be read', envelope(Messages.usageCheckFailed))] : []),
    ],
    [Headers.retryAfter],
  );

/** A success body with one or more examples. */
export const ok = (description: string, schema: TSchema, examples: Example[] = []): ResponseSpec => ({ description, schemas: [schema], examples });
export { named as example };
