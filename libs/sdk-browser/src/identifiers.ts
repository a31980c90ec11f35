/**
 * Client-side copy of the gateway's identifier screening (libs/contracts
 * identifiers.ts), kept dependency-free for the browser bundle. A unit test
 * checks that both agree.
 */
const DENYLIST = new Set([
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

/** The gateway's identifier length limit, in code points. */
export const MAX_ID_LENGTH = 200;

const QUOTES = /^(["'`])(.*)\1$/s;

const normalise = (value: string): string => value.normalize('NFKC').trim().toLowerCase();

/** True when `value` is a string of at most 200 code points that is not a junk or sentinel value, quoted or not. */
export function isValidIdentifier(value: unknown): value is string {
  if (typeof value !== 'string' || [...value].length > MAX_ID_LENGTH) return false;
  let candidate = normalise(value);
  for (let match = QUOTES.exec(candidate); match; match = QUOTES.exec(candidate)) candidate = normalise(match[2] ?? '');
  return !DENYLIST.has(candidate);
}

const ANON_ID = /^anon_[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** True for an anonymous id as this library mints it: `anon_` and a version 1-8 UUID (never the nil UUID). */
export function isAnonId(value: unknown): value is string {
  return typeof value === 'string' && ANON_ID.test(value);
}
