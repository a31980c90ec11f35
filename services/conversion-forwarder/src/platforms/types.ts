import type { Conversion, Platform } from '@svc/conversions';

/**
 * What a platform client needs to send one conversion, and what came of it.
 * The conversion itself, and the platforms' configs, are @svc/conversions'
 * (the queue stores them). Everything personal is already hashed: no
 * clear-text email or phone ever reaches this layer.
 */

/** Click-ID types each platform can attribute to, strongest first. */
export const USABLE_CLICK_TYPES: Record<Platform, readonly string[]> = {
  google_ads: ['gclid', 'gbraid', 'wbraid'],
  meta: ['fbclid'],
};

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
