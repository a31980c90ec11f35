import { Limits } from './limits';

const BODY_NOT_OBJECT = 'Invalid request: the body must be a JSON object';

/**
 * Every exact string of the interface spec, in one place. Code and tests import
 * these; nothing else spells them out. Changing one is a breaking API change.
 */

/** Request-level `error` messages (the `error` field of the envelope). */
export const Messages = {
  missingAuthorization: 'Missing Authorization header',
  invalidAuthorizationFormat: 'Invalid Authorization format. Use: Bearer <api_key>',
  emptyApiKey: 'Empty API key',
  invalidApiKey: 'Invalid or expired API key',
  authenticationFailed: 'Authentication failed',
  ipNotAllowed: 'Client IP not allowed for this API key',
  originNotAllowed: 'Origin not allowed for this API key',
  contentTypeNotJson: 'Content-Type must be application/json',
  emptyBody: 'Empty request body',
  invalidJson: 'Invalid JSON in request body',
  batchRequired: 'Invalid request: batch array is required',
  batchTooLarge: 'Batch too large: maximum 100 events per request',
  notFound: 'Not found',
  profileNotFound: 'Profile not found',
  mergeProfilesNotFound: 'One or both profiles not found',
  invalidCursor: 'Invalid cursor',
  searchParameterRequired: 'Search parameter required: q, email, user_id, or anonymous_id',
  rateLimitedPerIp: (max: number) => `Rate limit exceeded: max ${max} requests per minute per IP`,
  rateLimitedPerOrg: (max: number) => `Rate limit exceeded: max ${max} requests per minute per org`,
  quotaPaused: 'Event quota exceeded. Upgrade your plan to resume ingestion.',
  monthlyLimitReached: 'Monthly event limit exceeded. Please upgrade your plan.',
  bodyTooLarge: (limitBytes: number) => `Request body too large: maximum ${limitBytes} bytes`,
  usageCheckFailed: 'Service temporarily unavailable — usage check failed',
  serviceUnavailable: 'Service temporarily unavailable',
  internalError: 'Internal server error',
  /** Additive: plain HTTP reached a production listener. */
  httpsRequired: 'HTTPS is required: send requests to the https:// address of the API',
  methodNotAllowed: 'Method not allowed',
  /** Additive: the HTTP parser refused the request before any route saw it (bytes no request line may hold). */
  malformedRequest: 'Malformed HTTP request: check the request line and headers',
  /** Additive: 431, the request line and headers together exceed 16 KiB. */
  headersTooLarge: 'Request line and headers too large: at most 16 KiB together',
  /** Additive: 408, the headers did not arrive in time. */
  requestTimeout: 'Request timed out before its headers arrived',
  /** Additive, Segment-compatible routes: no Authorization header and no `writeKey` in the body. */
  writeKeyMissing: 'Missing write key: send it as the Basic-auth user (empty password) or as writeKey in the body',
  /** Additive, Segment-compatible routes: an Authorization header that is neither Basic nor Bearer. */
  invalidWriteKeyAuthorizationFormat: 'Invalid Authorization format. Use: Basic <base64 of write_key:> or Bearer <api_key>',
  /** Additive, Segment-compatible routes: a Content-Encoding other than gzip or identity. */
  unsupportedContentEncoding: 'Content-Encoding must be gzip or identity',
  /** Additive, Segment-compatible routes: `Content-Encoding: gzip` on a body that does not decompress. */
  invalidGzipBody: 'Invalid gzip body: Content-Encoding says gzip but the body does not decompress',
  /** Additive, Segment-compatible single-event routes (`/v1/track`, ...): a body that is not one JSON object. */
  singleEventRequired: 'Invalid request: the body must be one event object',
  /** Additive, erasure routes: the body is not one JSON object. */
  erasureBodyNotObject: BODY_NOT_OBJECT,
  /** Additive, POST /v1-profiles/erase: none, or more than one, of the identifiers. */
  erasureIdentifierRequired: 'Invalid request: give exactly one of user_id, anonymous_id, email, phone',
  /** Additive, POST /v1-profiles/erase: an identifier that is not a string of 1 to 200 characters, or not an email / phone. */
  erasureIdentifierInvalid: (field: 'user_id' | 'anonymous_id' | 'email' | 'phone') =>
    field === 'email' ? 'Invalid request: email must be an email address' : field === 'phone' ? 'Invalid request: phone must be a phone number' : `Invalid request: ${field} must be a string of 1 to 200 characters`,
  /** Additive, erasure routes: `reason` is not a string of at most 1000 characters. */
  erasureReasonInvalid: 'Invalid request: reason must be a string of at most 1000 characters',
  /** Additive, 409: an erasure of this profile (or identifier) was requested before; the body names it. */
  erasureAlreadyRequested: 'Erasure already requested for this profile',
  /** Additive, 404 of GET /v1-profiles/:id/erase. */
  erasureNotFound: 'Erasure request not found',
  /** Additive, POST /v1-profiles/:id/unmerge: the body is not a JSON object. */
  unmergeBodyNotObject: BODY_NOT_OBJECT,
  /** Additive, POST /v1-profiles/:id/unmerge: `merge_id` missing. */
  unmergeMergeIdRequired: 'Invalid request: merge_id is required',
  /** Additive, POST /v1-profiles/:id/unmerge: `merge_id` not a journal entry's id (decimal digits). */
  unmergeMergeIdInvalid: 'Invalid request: merge_id must be the id of a merge journal entry',
  /** Additive, 404 of POST /v1-profiles/:id/unmerge: no such entry in the profile's merge journal. */
  mergeNotFound: 'Merge not found',
  /** Additive, 409: a different unmerge undid this merge already; the body names it (`undone_by`). */
  mergeAlreadyUndone: 'Merge already undone',
  /** Additive, 409: the profile holds more events than one unmerge resolves again. */
  unmergeTooLarge: `Profile too large to unmerge: more than ${Limits.unmergeMaxEvents} events`,
  /** Additive, 409: the profile has alias events stored before unmerges existed, whose previousId was not kept. */
  unmergeNeedsReplay: 'Profile has alias events stored before unmerge existed: run svcctl replay first',
  /** Additive, 404 of GET /v1-profiles/:id/unmerge. */
  unmergeNotFound: 'Unmerge request not found',
  /** 403 for a valid key of the wrong type; names the type(s) the operation needs. */
  insufficientPermissions: (required: RequiredKeyType) =>
    `Insufficient permissions: this operation requires ${required === 'admin' ? 'an' : 'a'} ${required} key`,
} as const;

/** The key types an operation can require, as named in 403 messages. */
export type RequiredKeyType = 'write or admin' | 'read or admin' | 'admin';

/** Machine-readable `code` values of the error envelope. */
export const ErrorCodes = {
  rateLimited: 'rate_limited',
  ipNotAllowed: 'ip_not_allowed',
  originNotAllowed: 'origin_not_allowed',
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** 413 hints. */
export const BodyLimitHints = {
  batch: 'Split the payload into requests of at most 100 events and 1 MiB (1048576 bytes) each.',
  generic: 'Reduce the size of the request body.',
} as const;

/** Per-event reasons, reported inside `errors` as `<messageId>: <reason>`. */
export const EventReasons = {
  eventRequired: 'Event is required',
  typeRequired: 'Event type is required',
  invalidType: (type: string) => `Invalid event type: ${type}`,
  messageIdRequired: 'messageId is required',
  /** Additive (not in the spec's table): a messageId over 200 characters. */
  invalidMessageId: 'Invalid messageId',
  anonymousIdRequired: 'anonymousId is required',
  timestampRequired: 'timestamp is required',
  /** Additive (not in the spec's table): a present timestamp that is not ISO 8601. */
  invalidTimestamp: 'Invalid timestamp',
  eventNameRequired: 'event name is required for track events',
  eventNameTooLong: 'event name too long',
  userIdRequiredForAlias: 'userId is required for alias events',
  groupIdRequiredForGroup: 'groupId is required for group events',
  invalidAnonymousId: 'Invalid anonymousId',
  invalidUserId: 'Invalid userId',
  invalidPreviousId: 'Invalid previousId',
  identityResolutionFailed: 'identity_resolution_failed',
  insertFailed: 'insert_failed',
  notProcessed: 'not_processed',
  processingFailed: 'processing_failed',
} as const;

/** Response headers and their fixed values. */
export const Headers = {
  requestId: 'X-Request-ID',
  apiVersion: 'API-Version',
  quotaStatus: 'X-SVC-Quota-Status',
  rateLimitLimit: 'X-RateLimit-Limit',
  rateLimitRemaining: 'X-RateLimit-Remaining',
  retryAfter: 'Retry-After',
} as const;
export const API_VERSION = '1';
