/**
 * What a platform client needs to send one conversion, and what came of it.
 * Everything personal is already hashed: no clear-text email or phone ever
 * reaches this layer.
 */

export const PLATFORMS = ['google_ads', 'meta'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** Click-ID types each platform can attribute to, strongest first. */
export const USABLE_CLICK_TYPES: Record<Platform, readonly string[]> = {
  google_ads: ['gclid', 'gbraid', 'wbraid'],
  meta: ['fbclid'],
};

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

export type DeliveryOutcome =
  /** The platform accepted it. */
  | { kind: 'sent'; status: number }
  /** 5xx, 429, network error or timeout: try again later (retryAfterMs when the platform said). */
  | { kind: 'retry'; status: number | null; error: string; retryAfterMs?: number }
  /**
   * Any other refusal: permanent, with the platform's reason (never a secret).
   * clickUnusable: the platform refused the click itself as expired or invalid,
   * so the click ID is marked is_exhausted.
   */
  | { kind: 'failed'; status: number | null; error: string; clickUnusable: boolean };

export interface PlatformClient {
  readonly platform: Platform;
  send(conversion: Conversion): Promise<DeliveryOutcome>;
}
