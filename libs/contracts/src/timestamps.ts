/**
 * Timestamps as clients send them, and as the topics carry them. Clients send
 * ISO 8601 in many spellings (no seconds, no zone, a space for `T`); topic
 * schemas say `format: date-time` (RFC 3339), which downstream tooling relies
 * on. A timestamp is accepted in any spelling this file parses and is carried
 * on in RFC 3339, so an accepted value can never fail a topic's schema.
 */

const ISO_8601 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}(:?\d{2})?)?$/;
const RFC_3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const HAS_ZONE = /([Zz]|[+-]\d{2}(:?\d{2})?)$/;

/**
 * The RFC 3339 form of an ISO 8601 date-time: the value itself when it is
 * one already (the common case; the client's offset is kept), else the same
 * instant in UTC. A value without a zone is read as UTC: the server's own
 * zone says nothing about the client's. Undefined when it names no instant.
 */
export function canonicalTimestamp(value: unknown): string | undefined {
  if (typeof value !== 'string' || !ISO_8601.test(value)) return undefined;
  // Year 0000 parses in JavaScript but names no instant PostgreSQL can store.
  if (value.startsWith('0000')) return undefined;
  const ms = Date.parse(HAS_ZONE.test(value) ? value : `${value}Z`);
  if (Number.isNaN(ms) || !isRealDay(value)) return undefined;
  return RFC_3339.test(value) ? value : new Date(ms).toISOString();
}

/**
 * Date.parse rolls some impossible dates over (30 February becomes 2 March)
 * instead of refusing them; the written day must be a real one. Checked on
 * the date as written, before any offset moves it to another day.
 */
function isRealDay(value: string): boolean {
  const year = Number(value.slice(0, 4));
  const month = Number(value.slice(5, 7));
  const day = Number(value.slice(8, 10));
  if (month < 1 || month > 12 || day < 1) return false;
  return day <= daysInMonth(year, month);
}

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Days in `month` (1-12) of `year`, by the Gregorian calendar (RFC 3339's leap years). */
export function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : (DAYS_IN_MONTH[month] as number);
}
