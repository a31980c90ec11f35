import { Limits } from './limits';

/**
 * Junk and sentinel identifiers seen in the field: stringified nulls, placeholder
 * names and constants that would stitch unrelated visitors into one profile.
 * Compared after NFKC normalisation, trimming, lower-casing and unquoting.
 */
const DENYLIST: ReadonlySet<string> = new Set([
  '',
  'null',
  'undefined',
  'nil',
  'nan',
  'none',
  'true',
  'false',
  '0',
  '-1',
  'anonymous',
  'anon',
  'guest',
  'id',
  'email',
  'distinct_id',
  'distinctid',
  'user_id',
  'userid',
  'anonymous_id',
  'anonymousid',
  'not_authenticated',
  'unknown',
  '[object object]',
  '[object undefined]',
  '00000000-0000-0000-0000-000000000000',
  '00000000000000000000000000000000',
]);

const QUOTES = /^(["'`])(.*)\1$/s;

/** The canonical comparison form of a candidate identifier. */
function normalise(value: string): string {
  return value.normalize('NFKC').trim().toLowerCase();
}

/**
 * True when `value` is usable as an identifier: a string of at most 200
 * characters (code points) that is not a junk or sentinel value, quoted or not.
 */
export function isValidIdentifier(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  if ([...value].length > Limits.identifierMaxLength) return false;
  let candidate = normalise(value);
  // Unwrap as many layers of quotes as there are: '"null"' is as junk as 'null'.
  for (let match = QUOTES.exec(candidate); match; match = QUOTES.exec(candidate)) {
    candidate = normalise(match[2] ?? '');
  }
  return !DENYLIST.has(candidate);
}
