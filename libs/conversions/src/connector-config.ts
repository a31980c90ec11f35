import { ValidationError } from '@svc/runtime';
import type { GoogleAdsConfig, MetaConfig, Platform } from './platforms';

/**
 * What `svcctl connector add --config '<json>'` accepts per platform (the
 * CLI's snake_case), split into settings shown back and secrets sealed at
 * rest. Every problem is reported at once; nothing is stored on any.
 */

interface Field {
  secret?: boolean;
  optional?: boolean;
  /** Returns a problem, or undefined when the value is fine. */
  check?: (value: string) => string | undefined;
}

const digits = (v: string) => (/^\d[\d-]{0,30}$/.test(v) ? undefined : 'must be digits (dashes allowed)');

/** Endpoint overrides must be HTTPS, except on this machine (how tests reach a capture server). */
function endpoint(v: string): string | undefined {
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return 'must be a URL';
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (url.protocol === 'https:' || (url.protocol === 'http:' && loopback)) return undefined;
  return 'must be an https URL (http only for localhost)';
}

export const CONNECTOR_FIELDS: Record<Platform, Record<string, Field>> = {
  google_ads: {
    customer_id: { check: digits },
    conversion_action_id: { check: digits },
    client_id: {},
    developer_token: { secret: true },
    client_secret: { secret: true },
    refresh_token: { secret: true },
    login_customer_id: { optional: true, check: digits },
    api_base_url: { optional: true, check: endpoint },
    token_url: { optional: true, check: endpoint },
  },
  meta: {
    pixel_id: { check: digits },
    access_token: { secret: true },
    api_base_url: { optional: true, check: endpoint },
    test_event_code: { optional: true },
  },
};

export interface SplitConfig {
  settings: Record<string, string>;
  secrets: Record<string, string>;
}

/** Checks a connector's config and splits it; throws ValidationError listing every problem. */
export function splitConnectorConfig(platform: Platform, raw: unknown): SplitConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ValidationError('--config must be a JSON object');
  const fields = CONNECTOR_FIELDS[platform];
  const problems: string[] = [];
  const out: SplitConfig = { settings: {}, secrets: {} };
  for (const key of Object.keys(raw)) if (!(key in fields)) problems.push(`${key}: not a ${platform} setting`);
  for (const [key, field] of Object.entries(fields)) {
    const value = (raw as Record<string, unknown>)[key];
    if (value === undefined || value === null || value === '') {
      if (!field.optional) problems.push(`${key}: required`);
      continue;
    }
    if (typeof value !== 'string' && typeof value !== 'number') {
      problems.push(`${key}: must be a string`);
      continue;
    }
    const text = String(value).trim();
    const problem = field.check?.(text);
    if (problem) problems.push(`${key}: ${problem}`);
    else (field.secret ? out.secrets : out.settings)[key] = text;
  }
  if (problems.length) throw new ValidationError(`invalid ${platform} config: ${problems.join('; ')}`);
  return out;
}

const camel = (key: string) => key.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

/** The platform client's config from stored settings and opened secrets. */
export function platformConfig(split: SplitConfig): GoogleAdsConfig | MetaConfig {
  const all = { ...split.settings, ...split.secrets };
  return Object.fromEntries(Object.entries(all).map(([k, v]) => [camel(k), v])) as unknown as GoogleAdsConfig | MetaConfig;
}

/** A connector's custom set of qualifying names from `--events a,b`; null keeps the defaults. */
export function parseEventNames(raw: string | undefined): string[] | null {
  if (raw === undefined) return null;
  const names = [...new Set(raw.split(',').map((s) => s.trim()).filter(Boolean))];
  if (names.length === 0) throw new ValidationError('--events must name at least one event');
  const tooLong = names.find((n) => n.length > 200);
  if (tooLong) throw new ValidationError(`--events: ${JSON.stringify(tooLong.slice(0, 40))}… is longer than 200 characters`);
  return names;
}
