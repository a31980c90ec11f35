import { Limits, Messages } from '@svc/contracts';
import { HttpError } from '@svc/runtime';
import { PROFILE_SORT_FIELDS, type ProfileSortField } from '@svc/contracts';
import { ProfileLimits, ProfileMessages, SORT_ORDERS, type SortOrder } from './messages';

/**
 * Query-string rules of the Profiles API, as pure functions: each returns the
 * parsed value or throws a 400 HttpError with the message a client can act on.
 * `query` is express's parsed query (`req.query`): strings, or arrays of them
 * when a parameter is repeated.
 */
export type Query = Record<string, unknown>;

export interface ListParams {
  limit: number;
  offset: number;
  identified: boolean | undefined;
  sortBy: ProfileSortField;
  sortOrder: SortOrder;
}

export interface EventsParams {
  limit: number;
  offset: number;
  /** The raw `cursor` value; verified against the caller's organisation by the cursor codec. */
  cursor: string | undefined;
  eventName: string | undefined;
  preciseTotal: boolean;
}

export type SearchField = 'email' | 'user_id' | 'anonymous_id' | 'q';

export interface SearchParams {
  field: SearchField;
  value: string;
  partial: boolean;
  limit: number;
}

const DIGITS = /^\d+$/;

/** The single string value of a parameter; undefined when absent; 400 when repeated. */
export function single(query: Query, name: string): string | undefined {
  const raw = query[name];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw new HttpError(400, ProfileMessages.repeatedParameter(name));
  // Nothing stored holds U+0000 (PostgreSQL text cannot), so no value with one can match: say so rather than ask.
  if (raw.includes('\u0000')) throw new HttpError(400, ProfileMessages.nulInParameter(name));
  return raw;
}

/**
 * `limit`: a positive integer in decimal digits; absent → `defaultLimit`;
 * above `maxLimit` → clamped to it (the spec clamps the list; the events and
 * search routes follow it). Zero, negative, fractional or non-numeric → 400.
 */
export function parseLimit(query: Query, bounds: { defaultLimit: number; maxLimit: number }): number {
  const raw = single(query, 'limit');
  if (raw === undefined) return bounds.defaultLimit;
  if (!DIGITS.test(raw)) throw new HttpError(400, ProfileMessages.invalidLimit);
  const n = Number(raw);
  if (n < 1) throw new HttpError(400, ProfileMessages.invalidLimit);
  return Math.min(n, bounds.maxLimit);
}

/** `offset`: a non-negative integer (at most 2^53 - 1); absent → 0. */
export function parseOffset(query: Query): number {
  const raw = single(query, 'offset');
  if (raw === undefined) return 0;
  const n = Number(raw);
  if (!DIGITS.test(raw) || !Number.isSafeInteger(n)) throw new HttpError(400, ProfileMessages.invalidOffset);
  return n;
}

function oneOf<T extends string>(query: Query, name: string, allowed: readonly T[], message: string): T | undefined {
  const raw = single(query, name);
  if (raw === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(raw)) throw new HttpError(400, message);
  return raw as T;
}

function booleanParam(query: Query, name: string, message: string): boolean | undefined {
  const raw = oneOf(query, name, ['true', 'false'], message);
  return raw === undefined ? undefined : raw === 'true';
}

export function parseListParams(query: Query): ListParams {
  return {
    limit: parseLimit(query, Limits.profileList),
    offset: parseOffset(query),
    identified: booleanParam(query, 'identified', ProfileMessages.invalidIdentified),
    sortBy: oneOf(query, 'sort_by', PROFILE_SORT_FIELDS, ProfileMessages.invalidSortBy) ?? 'last_seen_at',
    sortOrder: oneOf(query, 'sort_order', SORT_ORDERS, ProfileMessages.invalidSortOrder) ?? 'desc',
  };
}

export function parseEventsParams(query: Query): EventsParams {
  const limit = parseLimit(query, Limits.profileEvents);
  const offset = parseOffset(query);
  const cursor = single(query, 'cursor');
  // An empty cursor is as malformed as any other unreadable one.
  if (cursor !== undefined && cursor === '') throw new HttpError(400, Messages.invalidCursor);
  const rawName = single(query, 'event_name');
  if (rawName !== undefined && rawName.length > ProfileLimits.maxEventNameLength) {
    throw new HttpError(400, ProfileMessages.invalidEventName);
  }
  const precise = oneOf(query, 'precise_total', ['1', '0', 'true', 'false'], ProfileMessages.invalidPreciseTotal);
  return {
    limit,
    offset,
    cursor,
    // `?event_name=` filters nothing.
    eventName: rawName === undefined || rawName === '' ? undefined : rawName,
    preciseTotal: precise === '1' || precise === 'true',
  };
}

export interface MergesParams {
  limit: number;
  /** The raw `cursor` value; verified against the caller's organisation by the cursor codec. */
  cursor: string | undefined;
}

/** GET /v1-profiles/:id/merges: `limit` as the other routes, an optional `cursor`. */
export function parseMergesParams(query: Query): MergesParams {
  const limit = parseLimit(query, Limits.profileMerges);
  const cursor = single(query, 'cursor');
  if (cursor === '') throw new HttpError(400, Messages.invalidCursor);
  return { limit, cursor };
}

const SEARCH_FIELDS: ReadonlyArray<[name: string, field: SearchField]> = [
  ['email', 'email'],
  ['user_id', 'user_id'],
  ['anonymous_id', 'anonymous_id'],
  ['q', 'q'],
  ['query', 'q'],
];

/**
 * Exactly one of email, user_id, anonymous_id, q (alias query). A parameter
 * that is empty or only whitespace counts as not given. Every value is at most
 * 200 characters (the spec's bound for q; no identifier is longer).
 */
export function parseSearchParams(query: Query): SearchParams {
  const given: Array<{ field: SearchField; value: string }> = [];
  for (const [name, field] of SEARCH_FIELDS) {
    const raw = single(query, name);
    if (raw === undefined || raw.trim() === '') continue;
    given.push({ field, value: field === 'q' || field === 'email' ? raw.trim() : raw });
  }
  const [first, ...rest] = given;
  if (first === undefined) throw new HttpError(400, Messages.searchParameterRequired);
  if (rest.length > 0) throw new HttpError(400, ProfileMessages.searchParameterConflict);
  if (first.value.length > Limits.search.maxQueryLength) throw new HttpError(400, ProfileMessages.searchTooLong);
  const partial = booleanParam(query, 'partial', ProfileMessages.invalidPartial) ?? false;
  // A substring of one or two characters matches most of an organisation's signals, and costs a scan of them all.
  if (partial && [...first.value].length < ProfileLimits.minPartialSearchLength) throw new HttpError(400, ProfileMessages.partialSearchTooShort);
  return { ...first, partial, limit: parseLimit(query, Limits.search) };
}
