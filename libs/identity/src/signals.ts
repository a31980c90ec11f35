import type { InboundEvent } from '@svc/contracts';
import { isSupportedCountry, parsePhoneNumberFromString, type CountryCode, type PhoneNumber } from 'libphonenumber-js/max';

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

/**
 * How a phone number written without its country is read: a region (ISO
 * 3166-1 alpha-2, `GB`: an organisation's identity rules name one) or a
 * country calling code (`44`: the deployment's PHONE_DEFAULT_COUNTRY_CODE,
 * the fallback). A calling code shared by several regions (1: the United
 * States, Canada and the Caribbean) reads national numbers by all of them.
 */
export type PhoneDefault = string;

const REGION = /^[A-Z]{2}$/;

/** Whether `value` is a region libphonenumber knows, as its ISO 3166-1 alpha-2 code in capitals (`GB`). */
export const isPhoneRegion = (value: string): boolean => REGION.test(value) && isSupportedCountry(value);


/** What may be in a phone trait besides digits: `+`, spaces and punctuation people write numbers with. */
const PHONE_CHARS = /^\+?[\d\s\-.()/]+$/;
const EXTENSION = /\s*(?:ext\.?|x|#)\s*\d{1,6}$/i;

/** The text of a value that may be a phone number (digits and the punctuation numbers are written with, no extension), else null. */
function phoneText(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const text = raw.trim().replace(EXTENSION, '');
  return text && text.length <= 40 && PHONE_CHARS.test(text) ? text : null;
}

/** Whether normalisePhone could make a number of `raw`, whatever its country: without one, a caller need not look its country up. */
export const mayBePhone = (raw: string): boolean => phoneText(raw) !== null;

/** Recent answers, so a trait repeated on every identify is parsed once (libphonenumber takes 10 to 20 µs a number). */
const recent = new Map<string, string | null>();
const RECENT_MAX = 10_000;

/**
 * E.164 (`+442079460958`), or null when the value is not a valid number:
 * parsed and validated with libphonenumber's metadata for every country
 * (libphonenumber-js/max), never guessed.
 * - international forms (`+44 20 7946 0958`, `0044 …`, `011 44 …`) keep
 *   their own country;
 * - national forms (`020 7946 0958`, with its trunk prefix) are read in
 *   `defaultTo`'s country;
 * - extensions (`x123`, `ext. 4`) are dropped; letters make it invalid;
 * - a number whose digits do not form a valid number of that country (too
 *   short, too long, a range no operator has) is null.
 */
export function normalisePhone(raw: unknown, defaultTo: PhoneDefault = DEFAULT_PHONE_COUNTRY_CODE): string | null {
  if (typeof raw === 'number') raw = Number.isSafeInteger(raw) && raw > 0 ? String(raw) : '';
  const text = phoneText(raw);
  if (text === null) return null;
  const key = `${defaultTo}\u0000${text}`;
  const known = recent.get(key);
  if (known !== undefined) return known;
  const phone = parsePhone(text, defaultTo);
  if (recent.size >= RECENT_MAX) recent.delete(recent.keys().next().value!);
  recent.set(key, phone);
  return phone;
}

const valid = (parsed: PhoneNumber | undefined): string | null => (parsed?.isValid() ? parsed.number : null);

function parsePhone(text: string, defaultTo: PhoneDefault): string | null {
  if (text.startsWith('+')) return valid(parsePhoneNumberFromString(text));
  // libphonenumber reads the default country's own international prefix (00 in most of it, 011 in North
  // America) as such; 00 is also taken from anywhere, as no valid national number starts with it.
  const national = valid(
    REGION.test(defaultTo) ? parsePhoneNumberFromString(text, defaultTo as CountryCode) : parsePhoneNumberFromString(text, { defaultCallingCode: defaultTo }),
  );
  if (national !== null) return national;
  const digits = text.replace(/\D/g, '');
  return digits.startsWith('00') ? valid(parsePhoneNumberFromString(`+${digits.slice(2)}`)) : null;
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
export function eventIdentity(
  event: InboundEvent,
  phoneDefault: PhoneDefault = DEFAULT_PHONE_COUNTRY_CODE,
  /** personTraits(event), when the caller has it already. */
  traits: Record<string, unknown> = personTraits(event),
): EventIdentity {
  const anonymousId = event.anonymousId;
  const userId = identifier(event.userId);
  const previous = event.type === 'alias' ? identifier(event.previousId) : null;
  return {
    anonymousId,
    userId,
    email: normaliseEmail(traits.email),
    phone: normalisePhone(traits.phone, phoneDefault),
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
