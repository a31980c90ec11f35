import { Limits, PROFILE_SORT_FIELDS } from '@svc/contracts';

/**
 * The Profiles API's own `error` strings: the ones the interface spec leaves
 * to us (it says "invalid limit or offset gives 400" without a message). The
 * spec's exact strings (`Not found`, `Profile not found`, `Invalid cursor`, ...)
 * come from `Messages` in @svc/contracts and are never spelled here.
 *
 * Candidates to move into @svc/contracts (as `ProfileMessages`, next to
 * `ConsentMessages`) so that clients and tests share them.
 */
export const SORT_ORDERS = ['desc', 'asc'] as const;
export type SortOrder = (typeof SORT_ORDERS)[number];

/** Bounds the spec does not fix; our choices (see the package README). */
export const ProfileLimits = {
  /** Longest profile id or canonical_id we look up (anything longer cannot exist). */
  maxIdLength: 200,
  /** Longest merge `reason` (stored as the audit note). */
  maxReasonLength: 1_000,
  /** Longest `event_name` filter: event names are at most this long. */
  maxEventNameLength: Limits.eventNameMaxLength,
  /** Shortest `partial=true` search value: a shorter substring matches (and scans) most of an organisation's signals. */
  minPartialSearchLength: 3,
  /** Newest events sampled to estimate a filtered total on the cursor path. */
  estimateSample: 1_000,
} as const;

export const ProfileMessages = {
  invalidLimit: 'Invalid limit: expected a positive integer',
  invalidOffset: 'Invalid offset: expected a non-negative integer',
  invalidIdentified: 'Invalid identified: expected true or false',
  invalidSortBy: `Invalid sort_by: expected one of ${PROFILE_SORT_FIELDS.join(', ')}`,
  invalidSortOrder: 'Invalid sort_order: expected asc or desc',
  invalidPreciseTotal: 'Invalid precise_total: expected 1 or 0',
  invalidPartial: 'Invalid partial: expected true or false',
  invalidEventName: `Invalid event_name: expected at most ${ProfileLimits.maxEventNameLength} characters`,
  /** A query parameter given more than once (`?limit=1&limit=2`). */
  repeatedParameter: (name: string) => `Invalid ${name}: give it at most once`,
  /** A query parameter holding U+0000 (`%00`), which no stored value can. */
  nulInParameter: (name: string) => `Invalid ${name}: U+0000 is not allowed`,
  searchTooLong: `Search query too long: maximum ${Limits.search.maxQueryLength} characters`,
  partialSearchTooShort: `Partial search needs at least ${ProfileLimits.minPartialSearchLength} characters`,
  searchParameterConflict: 'Only one search parameter is allowed: q, email, user_id, or anonymous_id',
  mergeIntoItself: 'Cannot merge a profile into itself',
  mergeBodyNotObject: 'Invalid request: the body must be a JSON object',
  mergeFieldRequired: (field: 'source_profile_id' | 'target_profile_id') => `Invalid request: ${field} is required`,
  mergeFieldInvalid: (field: 'source_profile_id' | 'target_profile_id') =>
    `Invalid request: ${field} must be a string of 1 to ${ProfileLimits.maxIdLength} characters`,
  mergeReasonInvalid: `Invalid request: reason must be a string of at most ${ProfileLimits.maxReasonLength} characters`,
} as const;
