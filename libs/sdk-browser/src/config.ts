import type { SvcConfig, SvcEvent } from './types';

export interface ResolvedConfig {
  writeKey: string;
  apiHost: string;
  eventUrl: string;
  consentUrl: string;
  /** Where sendBeacon posts at page exit when fetch has no keepalive; undefined: no beacon. */
  beaconUrl: string | undefined;
  flushAt: number;
  flushInterval: number;
  maxRetries: number;
  /** Idle timeout in milliseconds. */
  sessionTimeoutMs: number;
  trackPages: boolean;
  trackClicks: boolean;
  captureLinkQueryParams: boolean;
  maskQueryParams: string[];
  enableFingerprinting: boolean;
  respectDNT: boolean;
  respectGPC: boolean;
  consentMode: 'advisory' | 'enforced';
  storagePrefix: string;
  debug: boolean;
  onError: ((error: Error, droppedEvents: SvcEvent[]) => void) | undefined;
}

/** The at-most-100-events-per-request limit of /v1-batch; also the in-memory queue cap. */
export const MAX_BATCH = 100;

/** localhost, *.localhost, 127.0.0.0/8 and ::1: hosts that may be reached over plain HTTP. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  return (
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    /^127(\.\d{1,3}){3}$/.test(host) ||
    host === '[::1]' ||
    host === '::1'
  );
}

const num = (value: unknown, fallback: number, min: number, max: number, integer?: boolean): number => {
  if (typeof value !== 'number' || !isFinite(value) || value < min) return fallback;
  const bounded = Math.min(value, max);
  return integer ? Math.floor(bounded) : bounded;
};

const bool = (value: unknown, fallback: boolean): boolean => (typeof value === 'boolean' ? value : fallback);

const path = (value: unknown, fallback: string): string => {
  if (typeof value !== 'string') return fallback;
  return value === '' || value.startsWith('/') ? value : `/${value}`;
};

/**
 * Validates and completes `init()` options. Throws when writeKey or apiHost is
 * missing, when apiHost is not an absolute http(s) URL, or when it is plain
 * HTTP to anything but a loopback host.
 */
export function resolveConfig(input: SvcConfig): ResolvedConfig {
  if (!input || typeof input !== 'object') throw new Error('svc: init(config) needs a config object');
  const { writeKey, apiHost } = input;
  if (typeof writeKey !== 'string' || !writeKey.trim()) throw new Error('svc: writeKey is required');
  if (typeof apiHost !== 'string' || !apiHost.trim()) throw new Error('svc: apiHost is required');
  const match = /^(https?):\/\/(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#]+)(:\d+)?([^?#]*)$/i.exec(apiHost.trim());
  if (!match) throw new Error('svc: apiHost must be an absolute http(s) URL without query or fragment');
  const [, scheme = '', hostname = ''] = match;
  if (scheme.toLowerCase() !== 'https' && !isLoopbackHost(hostname)) {
    throw new Error(`svc: apiHost must use HTTPS (plain HTTP is allowed only for localhost and loopback), got ${hostname}`);
  }
  const base = apiHost.trim().replace(/\/+$/, '');
  const mode = input.consentMode;
  return {
    writeKey: writeKey.trim(),
    apiHost: base,
    eventUrl: base + path(input.eventPath, '/v1-batch'),
    consentUrl: base + path(input.consentPath, '/v1-consent'),
    beaconUrl: input.beaconPath === '' ? undefined : base + path(input.beaconPath, '/segment/v1/batch'),
    flushAt: num(input.flushAt, 20, 1, MAX_BATCH, true),
    flushInterval: num(input.flushInterval, 10_000, 1, 86_400_000),
    maxRetries: num(input.maxRetries, 3, 0, 20, true),
    sessionTimeoutMs: num(input.sessionTimeout, 30, 1e-6, 525_600) * 60_000,
    trackPages: bool(input.trackPages, true),
    trackClicks: bool(input.trackClicks, false),
    captureLinkQueryParams: bool(input.captureLinkQueryParams, false),
    maskQueryParams: Array.isArray(input.maskQueryParams) ? input.maskQueryParams.filter((k) => typeof k === 'string') : [],
    enableFingerprinting: bool(input.enableFingerprinting, false),
    respectDNT: bool(input.respectDNT, false),
    respectGPC: bool(input.respectGPC, true),
    consentMode: mode === 'enforced' ? 'enforced' : 'advisory',
    storagePrefix: typeof input.storagePrefix === 'string' ? input.storagePrefix : 'svc_',
    debug: bool(input.debug, false),
    onError: typeof input.onError === 'function' ? input.onError : undefined,
  };
}
