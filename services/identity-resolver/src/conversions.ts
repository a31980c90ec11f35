import { createHash } from 'node:crypto';
import type { ConversionCandidate } from '@svc/contracts';

/**
 * The spec's conversion value rules, and the value, currency and hashed
 * contact details that go on conversions.candidates (which events qualify is
 * `qualifiesAsConversion` in libs/contracts). Pure.
 */

/** Largest value forwarded; anything above is treated as a unit or parsing mistake. */
export const MAX_CONVERSION_VALUE = 1e12;
export const DEFAULT_CURRENCY = 'INR';

const DECIMAL = /^\d{1,13}(?:\.\d{1,6})?$/;

/**
 * properties.value as a number, or null when it is missing, non-numeric or out
 * of range. Numbers must be finite and within 0..1e12 (a negative value is a
 * refund, not a conversion). A string is accepted only as a plain decimal
 * (`"12.5"`, as tag managers send it); `"12,5"`, `"$12"`, `"1e3"`, `"0x10"`,
 * `""` are not numbers.
 */
export function conversionValue(raw: unknown): number | null {
  let n: number;
  if (typeof raw === 'number') n = raw;
  else if (typeof raw === 'string' && DECIMAL.test(raw.trim())) n = Number(raw.trim());
  else return null;
  return Number.isFinite(n) && n >= 0 && n <= MAX_CONVERSION_VALUE ? n : null;
}

/**
 * properties.currency as an upper-case ISO 4217 code (`usd` → `USD`); INR when
 * absent. `valid` is false when a currency was sent but is not a three-letter
 * code: the amount's unit is then unknown, so the value is dropped to null
 * rather than forwarded in the wrong currency.
 */
export function conversionCurrency(raw: unknown): { currency: string; valid: boolean } {
  if (raw === undefined || raw === null || raw === '') return { currency: DEFAULT_CURRENCY, valid: true };
  if (typeof raw === 'string' && /^[A-Za-z]{3}$/.test(raw.trim())) return { currency: raw.trim().toUpperCase(), valid: true };
  return { currency: DEFAULT_CURRENCY, valid: false };
}

/** properties.order_id as text (numbers too), or null. */
export function orderIdOf(raw: unknown): string | null {
  if (typeof raw === 'number' && Number.isFinite(raw)) return String(raw);
  if (typeof raw === 'string' && raw.trim() && raw.length <= 200) return raw.trim();
  return null;
}

export const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

export interface CandidateInput {
  orgId: string;
  profileId: string;
  eventId: string;
  messageId: string;
  eventName: string;
  eventTimestamp: string;
  properties: Record<string, unknown>;
  context: Record<string, unknown>;
  /** Normalised contact details: the event's own, else the profile's. Hashed here. */
  email: string | null;
  phone: string | null;
  clientIp: string | null;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const rec = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** The conversions.candidates payload. Clear-text email or phone never leaves this function. */
export function conversionCandidate(input: CandidateInput): ConversionCandidate {
  const { currency, valid } = conversionCurrency(input.properties.currency);
  return {
    v: 1,
    orgId: input.orgId,
    profileId: input.profileId,
    eventId: input.eventId,
    messageId: input.messageId,
    eventName: input.eventName,
    eventTimestamp: input.eventTimestamp,
    value: valid ? conversionValue(input.properties.value) : null,
    currency,
    orderId: orderIdOf(input.properties.order_id),
    hashedEmail: input.email === null ? null : sha256Hex(input.email),
    hashedPhone: input.phone === null ? null : sha256Hex(input.phone),
    // Meta hashes the digits without the `+`; Google Ads the E.164 form with it.
    hashedPhoneDigits: input.phone === null ? null : sha256Hex(input.phone.slice(1)),
    clientIp: str(input.context.ip_address) ?? input.clientIp,
    userAgent: str(input.context.user_agent) ?? str(input.context.userAgent),
    pageUrl: str(rec(input.context.page)?.url),
  };
}
