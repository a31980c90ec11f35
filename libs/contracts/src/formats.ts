import { fullFormats } from 'ajv-formats/dist/formats';
import type { FormatDefinition } from 'ajv';
import { daysInMonth } from './timestamps';

/**
 * The string formats every schema of ours is checked with: ajv-formats in
 * full mode, with a faster `date-time` that accepts exactly what its own
 * does. Every event and envelope carries two to four timestamps and is
 * checked twice on its way in (the gateway's checkEvent, then the bus before
 * producing); ajv-formats' `date-time` splits the string by a regular
 * expression and matches both halves with two more, and measured 4.5% of the
 * gateway's CPU. The spelling clients and our own code nearly always send,
 * `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, is read here digit by digit;
 * anything else (lower-case separators, a space, leap seconds, offsets
 * without a colon, junk) goes to ajv-formats' own check, so the two cannot
 * disagree (formats.test.ts holds them to that).
 */
const stockDateTime = fullFormats['date-time'] as FormatDefinition<string> & { validate: (s: string) => boolean };

const ZERO = 48;

/** The value of the two digits at `i`, or -1. */
function twoDigits(s: string, i: number): number {
  const a = s.charCodeAt(i) - ZERO;
  const b = s.charCodeAt(i + 1) - ZERO;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/** True when `s` is surely a valid RFC 3339 date-time in the common spelling; false means "ask ajv-formats". */
function commonDateTimeIsValid(s: string): boolean {
  const n = s.length;
  if (n < 20 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 84 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) {
    return false;
  }
  const century = twoDigits(s, 0);
  const yy = twoDigits(s, 2);
  const month = twoDigits(s, 5);
  const day = twoDigits(s, 8);
  const hour = twoDigits(s, 11);
  const minute = twoDigits(s, 14);
  const second = twoDigits(s, 17);
  if (century < 0 || yy < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) {
    return false;
  }
  if (day > daysInMonth(century * 100 + yy, month)) return false;
  let i = 19;
  if (s.charCodeAt(i) === 46) {
    // '.', then at least one digit
    i++;
    const start = i;
    while (i < n && s.charCodeAt(i) >= ZERO && s.charCodeAt(i) <= ZERO + 9) i++;
    if (i === start) return false;
  }
  if (i === n - 1) return s.charCodeAt(i) === 90; // 'Z'
  if (i !== n - 6) return false;
  const sign = s.charCodeAt(i);
  if ((sign !== 43 && sign !== 45) || s.charCodeAt(i + 3) !== 58) return false; // '+' or '-', ':'
  const offsetHours = twoDigits(s, i + 1);
  const offsetMinutes = twoDigits(s, i + 4);
  return offsetHours >= 0 && offsetHours <= 23 && offsetMinutes >= 0 && offsetMinutes <= 59;
}

export function isDateTime(s: string): boolean {
  return commonDateTimeIsValid(s) || stockDateTime.validate(s);
}

/** ajv-formats' full formats with `date-time` as above: for our ajv instances and the registry's serde. */
export const schemaFormats: typeof fullFormats = {
  ...fullFormats,
  'date-time': { ...stockDateTime, validate: isDateTime },
};
