import type { Conversion, GoogleAdsConfig } from '@svc/conversions';
import { createAccessTokenSource, GOOGLE_OAUTH_TOKEN_URL } from './google-oauth';
import { uploadOutcome } from './google-ads-errors';
import { googleCustomerId, isGoogleClickType, uploadClickConversionsBody } from './google-ads-upload';
import { DEFAULT_TIMEOUT_MS, post, retryOutcome, type Fetch, type PostResult } from './http';
import { safeOutcome } from './redact';
import type { DeliveryOutcome, PlatformClient } from './types';

export const GOOGLE_ADS_API_BASE_URL = 'https://googleads.googleapis.com';

/**
 * Google sunsets each major version about a year after release (v21 went on
 * 2026-08-05); bump this within that year.
 */
export const GOOGLE_ADS_API_VERSION = 'v26';

export interface GoogleAdsClientOptions {
  fetch?: Fetch;
  timeoutMs?: number;
  apiVersion?: string;
  /** Clock for the access-token cache, in epoch milliseconds. */
  now?: () => number;
}

export function createGoogleAdsClient(config: GoogleAdsConfig, opts: GoogleAdsClientOptions = {}): PlatformClient {
  const http = { fetch: opts.fetch ?? fetch, timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS };
  const tokens = createAccessTokenSource(
    {
      clientId: config.clientId,
      clientSecret: config.clientSecret,
      refreshToken: config.refreshToken,
      tokenUrl: config.tokenUrl ?? GOOGLE_OAUTH_TOKEN_URL,
    },
    http,
    opts.now ?? Date.now,
  );
  const customerId = googleCustomerId(config.customerId);
  const url = `${config.apiBaseUrl ?? GOOGLE_ADS_API_BASE_URL}/${opts.apiVersion ?? GOOGLE_ADS_API_VERSION}/customers/${encodeURIComponent(customerId)}:uploadClickConversions`;

  function upload(conversion: Conversion, accessToken: string): Promise<PostResult> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${accessToken}`,
      'developer-token': config.developerToken,
      'Content-Type': 'application/json',
    };
    if (config.loginCustomerId) headers['login-customer-id'] = googleCustomerId(config.loginCustomerId);
    return post(url, { headers, body: JSON.stringify(uploadClickConversionsBody(conversion, customerId, config.conversionActionId)) }, http);
  }

  async function deliver(conversion: Conversion): Promise<DeliveryOutcome> {
    if (!isGoogleClickType(conversion.click.type)) {
      return { kind: 'failed', status: null, error: `Google Ads cannot attribute to a ${conversion.click.type} click`, clickUnusable: false };
    }
    const first = await tokens.get();
    if (!first.ok) return first.outcome;
    let result = await upload(conversion, first.token);
    // A cached token can be revoked before its stated expiry: refresh once and
    // try once more; a second 401 is a real authorisation problem.
    if (result.kind === 'response' && result.response.status === 401) {
      tokens.invalidate();
      const fresh = await tokens.get();
      if (!fresh.ok) return fresh.outcome;
      result = await upload(conversion, fresh.token);
    }
    return result.kind === 'unreachable' ? retryOutcome(null, result.error) : uploadOutcome(result.response);
  }

  return {
    platform: 'google_ads',
    async send(conversion) {
      const outcome = await deliver(conversion);
      return safeOutcome(outcome, [config.clientSecret, config.refreshToken, config.developerToken, ...tokens.issuedTokens()]);
    },
  };
}
