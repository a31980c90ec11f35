/**
 * The platforms a connector sends to, and the data a queued conversion and a
 * connector's config hold for them. Everything personal is already hashed:
 * no clear-text email or phone is ever stored here. (The platform clients
 * that send it live in the conversion forwarder.)
 */

export const PLATFORMS = ['google_ads', 'meta'] as const;
export type Platform = (typeof PLATFORMS)[number];

export interface ClickRef {
  /** gclid, gbraid, wbraid or fbclid. */
  type: string;
  id: string;
  /** When the click was first seen (Meta's fbc creation time). */
  firstSeenAt: Date;
}

export interface Conversion {
  /** The event's messageId: Meta's event_id, so pixel and server events de-duplicate. */
  messageId: string;
  /** Our event name as ingested (e.g. `purchase` or `$purchase`, or a connector's custom name). */
  eventName: string;
  eventTime: Date;
  /** null: sent without a value. */
  value: number | null;
  /** ISO 4217, upper case. */
  currency: string;
  orderId: string | null;
  /** SHA-256 hex of the trimmed, lower-cased email. */
  hashedEmail: string | null;
  /** SHA-256 hex of the E.164 phone with `+` (Google Ads). */
  hashedPhone: string | null;
  /** SHA-256 hex of the E.164 digits without `+` (Meta). */
  hashedPhoneDigits: string | null;
  clientIp: string | null;
  userAgent: string | null;
  pageUrl: string | null;
  click: ClickRef;
}

export interface GoogleAdsConfig {
  customerId: string;
  conversionActionId: string;
  developerToken: string;
  clientId: string;
  clientSecret: string;
  refreshToken: string;
  /** Manager account, when the customer is reached through one. */
  loginCustomerId?: string;
  /** Default https://googleads.googleapis.com; tests point it at a capture server. */
  apiBaseUrl?: string;
  /** Default https://oauth2.googleapis.com/token. */
  tokenUrl?: string;
}

export interface MetaConfig {
  pixelId: string;
  accessToken: string;
  /** Default https://graph.facebook.com. */
  apiBaseUrl?: string;
  /** Meta's test-events code, for checking a setup in Events Manager. */
  testEventCode?: string;
}
