/** Public types of the library. */

export type Properties = Record<string, unknown>;
export type Traits = Record<string, unknown>;

export type EventType = 'track' | 'identify' | 'page' | 'screen' | 'alias' | 'group';

export interface PageContext {
  url: string;
  path: string;
  title: string;
  referrer: string;
  search: string;
  hash: string;
  language?: string;
}

export interface SessionContext {
  id: string;
  started_at: string;
  page_views: number;
  events_count: number;
  is_new_session: boolean;
}

export interface ReferrerEntry {
  url: string;
  timestamp: string;
}

/** The enriched context object every event carries (see the interface spec's Context object). */
export interface EventContext {
  page?: PageContext;
  campaign?: Record<string, string | ReferrerEntry[]>;
  device?: { type?: string; manufacturer?: string; model?: string; uaClientHints?: Record<string, unknown> };
  browser?: { name?: string; version?: string };
  os?: { name?: string; version?: string };
  screen?: { width?: number; height?: number; density?: number; viewport?: { innerWidth?: number; innerHeight?: number } };
  network?: { online?: boolean; wifi?: boolean; cellular?: boolean; saveData?: boolean };
  session?: SessionContext;
  fingerprint?: { hash: string; components: Record<string, unknown> };
  consent?: Partial<Record<ConsentPurpose, boolean>>;
  gpc?: boolean;
  locale?: string;
  timezone?: string;
  timezone_offset_mins?: number;
  library?: { name: string; version: string };
  user_agent?: string;
  [key: string]: unknown;
}

/** One event as sent inside `batch` to /v1-batch. */
export interface SvcEvent {
  type: EventType;
  messageId: string;
  anonymousId: string;
  timestamp: string;
  event?: string;
  userId?: string;
  groupId?: string;
  previousId?: string;
  properties?: Properties;
  traits?: Traits;
  context: EventContext;
}

/** Body of a 200 answer from /v1-batch. */
export interface BatchResult {
  success: boolean;
  processed: number;
  failed: number;
  errors?: string[];
  duration_ms?: number;
}

export type SvcErrorCode =
  /** A method argument was missing or illegal (e.g. a sentinel user id); nothing was sent. */
  | 'invalid_argument'
  /** The client is disabled (setEnabled(false), enforced consent denial, DNT or GPC). */
  | 'disabled'
  /** A plugin's beforeTrack returned null. */
  | 'dropped_by_plugin'
  /** The gateway answered 4xx (429 included): permanent. */
  | 'rejected'
  /** The gateway accepted the batch but rejected this event (200 with `errors`). */
  | 'event_failed'
  /** Evicted from the full in-memory queue (oldest first). */
  | 'evicted'
  /** 5xx or network errors on every attempt. */
  | 'retries_exhausted'
  /** Persisted for longer than the 7-day TTL. */
  | 'expired'
  /** A single event larger than a request may be. */
  | 'too_large'
  /** The queue was cleared by setEnabled(false) or an enforced consent denial. */
  | 'cleared';

export interface SvcError extends Error {
  code: SvcErrorCode;
  /** HTTP status, when a response was received. */
  status?: number;
  /** Parsed response body, when there was one. */
  response?: unknown;
}

/** Fired once per event: with an error when it was rejected or dropped, else with the ingestion result. */
export type Callback = (error?: SvcError, response?: BatchResult) => void;

export type ConsentPurpose = 'analytics' | 'fingerprinting' | 'identity';

export interface SvcPlugin {
  name: string;
  /** Called once, at init() or at use() when already initialised; may return a promise (ready() waits for it). */
  initialize?(client: SvcClient): void | Promise<void>;
  /** Sees every event before it is queued: return null to drop it, an event to replace it (undefined keeps it). */
  beforeTrack?(event: SvcEvent): SvcEvent | null | undefined | void;
  onIdentify?(userId: string, traits: Traits): void;
  onReset?(): void;
  /** Declared by some plugins; never invoked by this library. */
  afterTrack?(...args: unknown[]): unknown;
}

/** What showBanner() hands to a host-rendered banner: decisions made through it are recorded with source `banner`. */
export interface BannerControls {
  purposes: ConsentPurpose[];
  grant(purpose: ConsentPurpose): void;
  deny(purpose: ConsentPurpose): void;
}

export interface BannerConfig {
  /** Purposes the banner asks about. Default: analytics and fingerprinting. */
  purposes?: ConsentPurpose[];
  /** Renders the host's own UI; the library ships none. */
  render?(controls: BannerControls): void;
}

export interface ConsentApi {
  grant(purpose: ConsentPurpose): void;
  deny(purpose: ConsentPurpose): void;
  /** Synchronous, from the local decision: true only after an explicit grant. */
  hasConsent(purpose: ConsentPurpose): boolean;
  /** A stub with no UI: calls `config.render` when given, else only logs in debug mode. */
  showBanner(config?: BannerConfig): void;
}

export interface SvcClient {
  readonly VERSION: string;
  init(config: SvcConfig): void;
  identify(userId: string, traits?: Traits | Callback, callback?: Callback): void;
  track(event: string, properties?: Properties | Callback, callback?: Callback): void;
  page(name?: string, properties?: Properties | Callback, callback?: Callback): void;
  page(properties?: Properties, callback?: Callback): void;
  page(callback?: Callback): void;
  screen(name: string, properties?: Properties | Callback, callback?: Callback): void;
  alias(userId: string, previousId?: string | Callback, callback?: Callback): void;
  group(groupId: string, traits?: Traits | Callback, callback?: Callback): void;
  reset(): void;
  getAnonymousId(): string;
  getUserId(): string | null;
  flush(callback?: (error?: SvcError) => void): Promise<void>;
  ready(): Promise<void>;
  setEnabled(enabled: boolean): void;
  isEnabled(): boolean;
  setDebug(enabled: boolean): void;
  use(plugin: SvcPlugin): void;
  consent: ConsentApi;
}

/** Options of `init()`; see the README for every option's meaning. */
export interface SvcConfig {
  /** Write key (`uk_live_` prefix). Required. */
  writeKey: string;
  /** Base URL of the service, e.g. `https://api.example.com/functions/v1`. Required. */
  apiHost: string;
  /** Appended to apiHost for event batches. Default `/v1-batch`; empty posts to apiHost itself. */
  eventPath?: string;
  /** Appended to apiHost for consent records. Default `/v1-consent`. */
  consentPath?: string;
  /**
   * Appended to apiHost for the page-exit fallback where fetch has no
   * keepalive: sendBeacon cannot send an Authorization header or JSON, so it
   * posts `{ writeKey, batch }` as text/plain to the Segment-compatible route.
   * Default `/segment/v1/batch`; empty turns the fallback off.
   */
  beaconPath?: string;
  /** Send when this many events are queued. Default 20 (1 to 100). */
  flushAt?: number;
  /** Milliseconds between timed sends. Default 10000. */
  flushInterval?: number;
  /** Retries after the first failed send; only 5xx and network errors are retried. Default 3. */
  maxRetries?: number;
  /** Session idle timeout in minutes. Default 30. */
  sessionTimeout?: number;
  /** Track the first pageview and every route change. Default true. */
  trackPages?: boolean;
  /** Track clicks on links and buttons. Default false. */
  trackClicks?: boolean;
  /** Keep query and hash of auto-tracked link URLs (redacted). Default false: origin and path only. */
  captureLinkQueryParams?: boolean;
  /** Extra query parameter names to redact on top of the built-in denylist. */
  maskQueryParams?: string[];
  /** Compute a device fingerprint (attached only with `fingerprinting` consent). Default false. */
  enableFingerprinting?: boolean;
  /** Disable the client when the browser sends Do Not Track. Default false. */
  respectDNT?: boolean;
  /** Disable the client when Global Privacy Control is asserted. Default true. */
  respectGPC?: boolean;
  /** `advisory` records decisions only; `enforced` also stops capture on an analytics denial. Default `advisory`. */
  consentMode?: 'advisory' | 'enforced';
  /** Local storage key prefix. Default `svc_`. */
  storagePrefix?: string;
  /** Verbose logging to the console. Default false. */
  debug?: boolean;
  /** Called when events are permanently dropped (4xx rejection, eviction, exhausted retries, expiry). */
  onError?: (error: Error, droppedEvents: SvcEvent[]) => void;
}

