import type { InboundEvent } from '@svc/contracts';

/**
 * Identity signals: what an event says about who sent it. Pure functions, no I/O.
 */

/** Strongest first: the order in which a signal decides an event's profile. */
export const SIGNAL_TYPES = ['user_id', 'email', 'phone', 'anonymous_id'] as const;
export type SignalType = (typeof SIGNAL_TYPES)[number];

/**
 * How sure a signal makes us that two events come from one person. A userId
 * is asserted by the customer's own system; an email or phone is a trait the
 * person typed (shared mailboxes and mistyped numbers exist); an anonymousId
 * is a browser or device, which people share.
 */
export const SIGNAL_CONFIDENCE: Readonly<Record<SignalType, number>> = {
  user_id: 1,
  email: 0.9,
  phone: 0.8,
  anonymous_id: 0.6,
};

export interface Signal {
  type: SignalType;
  value: string;
}

/** The identities one event carries, normalised. */
export interface EventIdentity {
  anonymousId: string;
  userId: string | null;
  email: string | null;
  phone: string | null;
  /**
   * On `alias` only, and only when it differs from both userId and
   * anonymousId: the identity whose profile is merged into the userId's.
   */
  previousId: string | null;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Trimmed and lower-cased; null when it is not shaped like an address (or over 254 characters). */
export function normaliseEmail(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const email = raw.trim().toLowerCase();
  return email.length <= 254 && EMAIL.test(email) ? email : null;
}

/** Country calling code assumed for a national number written without one (India, as the INR default). */
export const DEFAULT_PHONE_COUNTRY_CODE = '91';

const PHONE_CHARS = /^\+?[\d\s\-.()/]+$/;
const EXTENSION = /\s*(?:ext\.?|x|#)\s*\d{1,6}$/i;
const E164 = /^\+[1-9]\d{7,14}$/;

/**
 * E.164 (`+` and 8 to 15 digits), or null when it cannot be one.
 * - `+44 20 7946 0958`, `0044 20 7946 0958` → `+442079460958`
 * - a national number of 10 digits, optionally after a trunk `0`, gets the
 *   default country code: `098765 43210` → `+919876543210`
 * - 11 to 15 digits without a prefix are taken as already international
 * - extensions (`x123`, `ext. 4`) are dropped; letters otherwise make it invalid
 */
export function normalisePhone(raw: unknown, defaultCountryCode = DEFAULT_PHONE_COUNTRY_CODE): string | null {
  if (typeof raw === 'number') raw = Number.isSafeInteger(raw) && raw > 0 ? String(raw) : '';
  if (typeof raw !== 'string') return null;
  const text = raw.trim().replace(EXTENSION, '');
  if (!text || text.length > 40 || !PHONE_CHARS.test(text)) return null;
  const digits = text.replace(/\D/g, '');
  let international: string;
  if (text.startsWith('+')) international = digits;
  else if (digits.startsWith('00')) international = digits.slice(2);
  else if (digits.length === 11 && digits.startsWith('0')) international = defaultCountryCode + digits.slice(1);
  else if (digits.length === 10) international = defaultCountryCode + digits;
  else if (digits.length >= 11) international = digits;
  else return null;
  const e164 = `+${international}`;
  return E164.test(e164) ? e164 : null;
}

const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** A usable identifier string (the gateway screened junk already), else null. */
function identifier(v: unknown): string | null {
  return typeof v === 'string' && v.length > 0 ? v : null;
}

/**
 * The person's traits an event carries: `traits` (identify) and the
 * Segment-style `context.traits` on any event. A `group` event's traits
 * describe the group (a company's email, say), never the person, so a group
 * event carries none.
 */
export function personTraits(event: InboundEvent): Record<string, unknown> {
  if (event.type === 'group') return {};
  return { ...asRecord(asRecord(event.context)?.traits), ...asRecord(event.traits) };
}

/** The identities of one event, normalised; see EventIdentity. */
export function eventIdentity(event: InboundEvent, defaultCountryCode = DEFAULT_PHONE_COUNTRY_CODE): EventIdentity {
  const traits = personTraits(event);
  const anonymousId = event.anonymousId;
  const userId = identifier(event.userId);
  const previous = event.type === 'alias' ? identifier(event.previousId) : null;
  return {
    anonymousId,
    userId,
    email: normaliseEmail(traits.email),
    phone: normalisePhone(traits.phone, defaultCountryCode),
    previousId: previous !== null && previous !== userId && previous !== anonymousId ? previous : null,
  };
}

/** Every signal of the event, strongest first (previousId not included). */
export function signalsOf(identity: EventIdentity): Signal[] {
  const out: Signal[] = [];
  if (identity.userId !== null) out.push({ type: 'user_id', value: identity.userId });
  if (identity.email !== null) out.push({ type: 'email', value: identity.email });
  if (identity.phone !== null) out.push({ type: 'phone', value: identity.phone });
  out.push({ type: 'anonymous_id', value: identity.anonymousId });
  return out;
}

export const signalKey = (type: SignalType, value: string): string => `${type}\u0000${value}`;
