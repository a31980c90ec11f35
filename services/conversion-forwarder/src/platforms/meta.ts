import type { Conversion, MetaConfig } from '@svc/conversions';
import { DEFAULT_TIMEOUT_MS, post, retryOutcome, type Fetch } from './http';
import { eventsOutcome } from './meta-errors';
import { metaEventsBody } from './meta-events';
import { safeOutcome } from './redact';
import type { DeliveryOutcome, PlatformClient } from './types';

export const META_GRAPH_API_BASE_URL = 'https://graph.facebook.com';

/** Graph API versions stay callable about two years after release (v26.0: 2026-07-29). */
export const META_GRAPH_API_VERSION = 'v26.0';

export interface MetaClientOptions {
  fetch?: Fetch;
  timeoutMs?: number;
  apiVersion?: string;
}

export function createMetaClient(config: MetaConfig, opts: MetaClientOptions = {}): PlatformClient {
  const http = { fetch: opts.fetch ?? fetch, timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS };
  const url = `${config.apiBaseUrl ?? META_GRAPH_API_BASE_URL}/${opts.apiVersion ?? META_GRAPH_API_VERSION}/${encodeURIComponent(config.pixelId)}/events`;

  async function deliver(conversion: Conversion): Promise<DeliveryOutcome> {
    if (conversion.click.type !== 'fbclid') {
      return { kind: 'failed', status: null, error: `Meta cannot attribute to a ${conversion.click.type} click`, clickUnusable: false };
    }
    const result = await post(
      url,
      {
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(metaEventsBody(conversion, config.accessToken, config.testEventCode)),
      },
      http,
    );
    return result.kind === 'unreachable' ? retryOutcome(null, result.error) : eventsOutcome(result.response);
  }

  return {
    platform: 'meta',
    async send(conversion) {
      return safeOutcome(await deliver(conversion), [config.accessToken]);
    },
  };
}
