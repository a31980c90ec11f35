import type { GoogleAdsConfig, MetaConfig, Platform } from '@svc/conversions';
import { createGoogleAdsClient } from './google-ads';
import type { Fetch } from './http';
import { createMetaClient } from './meta';
import type { PlatformClient } from './types';

export * from './types';
export { DEFAULT_TIMEOUT_MS, type Fetch } from './http';
export { MAX_ERROR_LENGTH } from './redact';
export { createGoogleAdsClient, GOOGLE_ADS_API_BASE_URL, GOOGLE_ADS_API_VERSION, type GoogleAdsClientOptions } from './google-ads';
export { GOOGLE_OAUTH_TOKEN_URL } from './google-oauth';
export { CLICK_UNUSABLE_ERRORS, TOO_RECENT_RETRY_MS } from './google-ads-errors';
export { createMetaClient, META_GRAPH_API_BASE_URL, META_GRAPH_API_VERSION, type MetaClientOptions } from './meta';
export { META_STANDARD_EVENTS, metaEventName } from './meta-events';
export { META_MALFORMED_FBC_SUBCODE, META_RATE_LIMIT_CODES } from './meta-errors';

export interface PlatformConfigs {
  google_ads: GoogleAdsConfig;
  meta: MetaConfig;
}

/** What both clients accept; platform-specific options go through their own factories. */
export interface PlatformClientOptions {
  fetch?: Fetch;
  timeoutMs?: number;
}

export function createPlatformClient<P extends Platform>(platform: P, config: PlatformConfigs[P], options?: PlatformClientOptions): PlatformClient {
  switch (platform) {
    case 'google_ads':
      return createGoogleAdsClient(config as GoogleAdsConfig, options);
    case 'meta':
      return createMetaClient(config as MetaConfig, options);
    default:
      // The platform usually comes from a stored connector row, not from typed code.
      throw new Error(`unknown conversion platform: ${String(platform)}`);
  }
}
