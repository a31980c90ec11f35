import { clickEvent, watchRoutes } from './autocapture';
import type { ElementLike, Env, WindowLike } from './dom';
import { extendReferrerChain, parseCampaign } from './campaign';
import type { ResolvedConfig } from './config';
import { resolveConfig } from './config';
import type { ConsentSender, ConsentSource, ConsentStore } from './consent';
import { consentRecord, createConsentSender, createConsentStore, isPurpose, PURPOSES } from './consent';
import { liveContext, pageContext, staticContext } from './context';
import type { Delivery } from './delivery';
import { createDelivery } from './delivery';
import { svcError } from './errors';
import { computeFingerprint } from './fingerprint';
import { isValidIdentifier, MAX_ID_LENGTH } from './identifiers';
import type { Identity } from './identity';
import { createIdentity } from './identity';
import { createPluginHost } from './plugins';
import type { QueueEntry } from './queue';
import { createQueue } from './queue';
import type { Redactor } from './redaction';
import { createRedactor } from './redaction';
import type { SessionManager } from './session';
import { createSessionManager } from './session';
import type { KeyValueStore } from './storage';
import { readJSON, webStore, writeJSON } from './storage';
import type { TabCoordinator } from './tabs';
import { createTabs } from './tabs';
import { postJSON } from './transport';
import type {
  BatchResult,
  Callback,
  ConsentPurpose,
  EventContext,
  EventType,
  Properties,
  ReferrerEntry,
  SvcClient,
  SvcError,
  SvcEvent,
} from './types';
import { isObject, uuid } from './util';
import { LIBRARY_NAME, VERSION } from './version';

const browserEnv = (): Env => ({ win: globalThis as unknown as WindowLike, now: () => Date.now(), random: Math.random });

const splitArgs = (a: unknown, b: unknown): [Record<string, unknown>, Callback | undefined] =>
  typeof a === 'function' ? [{}, a as Callback] : [isObject(a) ? a : {}, typeof b === 'function' ? (b as Callback) : undefined];

const asId = (value: unknown): unknown => (typeof value === 'number' && isFinite(value) ? String(value) : value);

/**
 * Creates a client. The library's singleton is `createClient()` over the real
 * window; tests pass their own environment.
 */
export function createClient(getEnv: () => Env = browserEnv): SvcClient {
  // Everything below `cfg` exists once init() has run (need() guards every use).
  let cfg: ResolvedConfig | undefined;
  let env: Env;
  let win: WindowLike;
  let store: KeyValueStore;
  let prefix: string;
  let identity: Identity;
  let session: SessionManager;
  let consent: ConsentStore;
  let sender: ConsentSender;
  let delivery: Delivery;
  let tabs: TabCoordinator;
  let redact: Redactor;
  let staticCtx: EventContext;
  let signalOptOut = false;
  let debug = false;
  let manualEnabled = true;
  let referrer = '';
  let lastUrl = '';
  let fingerprint: EventContext['fingerprint'];
  let lastAdoption = -Infinity;
  const callbacks = new Map<string, Callback>();
  let resolveReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (resolveReady = resolve));

  const print = (level: 'log' | 'warn' | 'error', ...args: unknown[]): void => cfg && win.console?.[level]('[svc]', ...args);
  const log = (...args: unknown[]): void => {
    if (debug) print('log', ...args);
  };
  const plugins = createPluginHost((name, hook, error) => print('error', `plugin ${name} ${hook} failed:`, error));

  const need = (): ResolvedConfig => {
    if (!cfg) throw new Error('svc: call init() first');
    return cfg;
  };

  const isEnabled = (): boolean => !!cfg && manualEnabled && !signalOptOut && !(cfg.consentMode === 'enforced' && consent.get('analytics') === false);

  const now = (): number => env.now();
  const iso = (): string => new Date(now()).toISOString();
  const newId = (): string => uuid(win.crypto, env.random);

  /** Calls the event's callback, once. */
  const fire = (messageId: string, error?: SvcError, response?: BatchResult): void => {
    const cb = callbacks.get(messageId);
    callbacks.delete(messageId);
    try {
      cb?.(error, response);
    } catch (err) {
      print('error', 'callback failed:', err);
    }
  };

  /** Rejects a call that queued nothing: through its callback, asynchronously like any other outcome. */
  const reject = (cb: Callback | undefined, error: SvcError): void => {
    log(error.message);
    if (cb) void Promise.resolve(error).then(cb);
  };

  const dropped = (error: SvcError, entries: readonly QueueEntry[], report = true): void => {
    if (!entries.length) return;
    log(error.message, entries.length);
    for (const x of entries) fire(x.e.messageId, error);
    try {
      if (report) cfg?.onError?.(error, entries.map((x) => x.e));
    } catch (err) {
      print('error', 'onError failed:', err);
    }
  };

  const delivered = (entries: readonly QueueEntry[], body: unknown, quota: string | null): void => {
    if (quota === 'grace') log('billing grace period');
    const result = isObject(body) ? (body as unknown as BatchResult) : undefined;
    const failures = new Map<string, string>();
    for (const line of Array.isArray(result?.errors) ? result.errors : []) {
      const at = typeof line === 'string' ? line.indexOf(': ') : -1;
      if (at > 0) failures.set(line.slice(0, at), line.slice(at + 2));
    }
    for (const x of entries) {
      const reason = failures.get(x.e.messageId);
      if (reason) dropped(svcError('event_failed', `event rejected: ${reason}`, 200, body), [x]);
      else fire(x.e.messageId, undefined, result);
    }
  };

  const clearQueue = (reason: string): void => dropped(svcError('cleared', reason), delivery.clear(), false);

  const adopt = async (): Promise<void> => {
    if (!isEnabled() || now() - lastAdoption < 5000) return;
    lastAdoption = now();
    await tabs.claimOrphans((entries) => {
      log(`adopting ${entries.length} event(s) of a closed page, ${entries.filter((x) => x.f).length} of them sent without an answer seen`);
      if (isEnabled()) dropped(svcError('evicted', 'queue full'), delivery.adopt(entries));
    });
  };

  const stored = <T>(key: string): T | undefined => readJSON<T>(store, prefix + key);

  const referrerChain = (): ReferrerEntry[] => {
    const chain = stored<unknown>('referrers');
    return Array.isArray(chain) ? (chain as ReferrerEntry[]) : [];
  };

  const buildContext = (isPage: boolean): EventContext => {
    const sess = session.touch(isPage);
    const ctx: EventContext = {
      ...(JSON.parse(JSON.stringify(staticCtx)) as EventContext),
      page: pageContext(win, redact, referrer),
      ...liveContext(win),
      session: sess,
      library: { name: LIBRARY_NAME, version: VERSION },
    };
    // campaign fields of the current URL, else those stored at this session's landing
    let campaign: NonNullable<EventContext['campaign']> = parseCampaign(win.location?.search ?? '');
    if (Object.keys(campaign).length) writeJSON(store, `${prefix}campaign`, { sid: sess.id, c: campaign });
    else {
      const saved = stored<{ sid?: string; c?: Record<string, string> }>('campaign');
      if (saved?.sid === sess.id && isObject(saved.c)) campaign = saved.c;
    }
    const chain = referrerChain();
    if (chain.length) campaign = { ...campaign, referrer_chain: chain };
    if (Object.keys(campaign).length) ctx.campaign = campaign;
    const decided = consent.decided();
    if (Object.keys(decided).length) ctx.consent = decided;
    if (win.navigator?.globalPrivacyControl === true) ctx.gpc = true;
    if (need().enableFingerprinting && consent.get('fingerprinting') === true) ctx.fingerprint = fingerprint ??= computeFingerprint(win);
    return ctx;
  };

  /** Builds, filters through plugins and queues one event. */
  const emit = (type: EventType, fields: Partial<SvcEvent>, cb?: Callback): void => {
    if (!isEnabled()) return reject(cb, svcError('disabled', `disabled: ${type} dropped`));
    const userId = identity.userId();
    const out = plugins.beforeTrack({
      type,
      messageId: newId(),
      anonymousId: identity.anonymousId(),
      timestamp: iso(),
      ...(userId ? { userId } : {}),
      ...fields,
      context: buildContext(type === 'page'),
    });
    if ('droppedBy' in out) return reject(cb, svcError('dropped_by_plugin', `dropped by plugin ${out.droppedBy}`));
    if (cb) callbacks.set(out.messageId, cb);
    log('queued', out);
    delivery.enqueue(out);
  };

  const invalid = (message: string): SvcError => svcError('invalid_argument', message);

  const decide = (purpose: ConsentPurpose, granted: boolean, source: ConsentSource): void => {
    const { consentMode } = need();
    if (!isPurpose(purpose)) throw new TypeError(`svc: unknown consent purpose "${String(purpose)}" (known: ${PURPOSES.join(', ')})`);
    const timestamp = iso();
    consent.set(purpose, granted, source, timestamp);
    log(`consent ${granted}: ${purpose}`);
    if (purpose === 'fingerprinting' && !granted) fingerprint = undefined;
    if (purpose === 'analytics' && consentMode === 'enforced') {
      if (granted) {
        manualEnabled = true;
        delivery.schedule();
      } else clearQueue('analytics consent denied');
    }
    sender.send(consentRecord(identity.anonymousId(), identity.userId(), { [purpose]: granted }, source, timestamp));
  };

  const client: SvcClient = {
    VERSION,

    init(config) {
      if (cfg) return log('init() already called: ignored');
      const c = resolveConfig(config);
      env = getEnv();
      win = env.win;
      const loc = win.location;
      if (!loc) throw new Error('svc: init() needs a browser window');
      if (/^uk_(read|admin)_/.test(c.writeKey)) win.console?.warn('[svc] writeKey must be a write key (uk_live_): read and admin keys must never be embedded in a page');
      debug ||= c.debug;
      prefix = c.storagePrefix;
      store = webStore(() => win.localStorage);
      const nav = win.navigator;
      const dnt = [nav?.doNotTrack, nav?.msDoNotTrack, win.doNotTrack].some((v) => v === '1' || v === 'yes');
      const post = (url: string, body: string, keepalive: boolean) => postJSON(win, url, c.writeKey, body, keepalive);
      tabs = createTabs(store, prefix, newId(), nav?.locks, now, Math.max(60_000, 2 * c.flushInterval + 30_000), (ms) => new Promise((resolve) => win.setTimeout(resolve, ms)));
      identity = createIdentity(store, prefix, loc.search, () => `anon_${newId()}`);
      session = createSessionManager(store, `${prefix}session`, now, c.sessionTimeoutMs, newId);
      consent = createConsentStore(store, `${prefix}consent`);
      sender = createConsentSender(store, `${prefix}consent_outbox`, (body) => post(c.consentUrl, body, true), newId, log);
      redact = createRedactor(c.maskQueryParams);
      staticCtx = staticContext(nav, now());
      signalOptOut = (c.respectDNT && dnt) || (c.respectGPC && nav?.globalPrivacyControl === true);
      delivery = createDelivery({
        queue: createQueue(store, tabs.bucketKey, now),
        send: (events, keepalive) => post(c.eventUrl, JSON.stringify({ batch: events }), keepalive),
        now,
        random: () => env.random(),
        setTimeout: (fn, ms) => win.setTimeout(fn, ms),
        clearTimeout: (handle) => win.clearTimeout(handle),
        flushAt: c.flushAt,
        flushInterval: c.flushInterval,
        maxRetries: c.maxRetries,
        keepalive: !!win.Request && 'keepalive' in win.Request.prototype,
        // A string body goes as text/plain, which needs no preflight; the key travels in it.
        sendBeacon: c.beaconUrl && nav?.sendBeacon ? (events) => !!nav.sendBeacon?.(c.beaconUrl!, JSON.stringify({ writeKey: c.writeKey, batch: events })) : undefined,
        delivered,
        dropped,
        beforeDrain: adopt,
        log,
      });
      cfg = c;
      if (signalOptOut) log('disabled by Do Not Track or Global Privacy Control');
      referrer = win.document?.referrer ?? '';
      lastUrl = loc.href;
      const chain = extendReferrerChain(referrerChain(), redact(referrer), loc.hostname, iso());
      if (chain.length) writeJSON(store, `${prefix}referrers`, chain);
      // No unload listener: pagehide and a hidden document are the last reliable moments.
      win.addEventListener('pagehide', () => delivery.beacon(true));
      win.document?.addEventListener('visibilitychange', () => {
        if (win.document?.visibilityState === 'hidden') delivery.beacon(false);
      });
      void Promise.all([plugins.initialize(plugins.list(), client), tabs.ready.then(adopt)])
        .catch((err: unknown) => log('async init failed', err))
        .then(resolveReady);
      sender.resend();
      if (c.trackPages) {
        watchRoutes(win, () => {
          const href = win.location?.href ?? '';
          if (href === lastUrl) return;
          referrer = lastUrl;
          lastUrl = href;
          if (isEnabled()) client.page();
        });
        if (isEnabled()) client.page();
      }
      if (c.trackClicks) {
        win.document?.addEventListener(
          'click',
          (e: { target?: ElementLike | null }) => {
            try {
              const target = e.target && !e.target.tagName ? e.target.parentElement : e.target;
              const click = isEnabled() && clickEvent(target, { captureLinkQueryParams: c.captureLinkQueryParams, redact });
              if (click) client.track(click.event, click.properties);
            } catch (err) {
              log('click capture failed', err);
            }
          },
          true,
        );
      }
      log('initialised', c);
    },

    identify(userId, traits, callback) {
      need();
      const [t, cb] = splitArgs(traits, callback);
      const id = asId(userId);
      if (!isValidIdentifier(id)) return reject(cb, invalid('identify() needs a real user id'));
      const merged = identity.setUser(id, t);
      plugins.onIdentify(id, merged);
      emit('identify', { userId: id, traits: merged }, cb);
    },

    track(event, properties, callback) {
      need();
      const [props, cb] = splitArgs(properties, callback);
      if (typeof event !== 'string' || !event.trim() || [...event].length > MAX_ID_LENGTH) return reject(cb, invalid('track() needs an event name of 1 to 200 characters'));
      emit('track', { event, properties: props }, cb);
    },

    page(a?: unknown, b?: unknown, c?: unknown) {
      need();
      const named = typeof a === 'string';
      const [props, cb] = named || a == null ? splitArgs(b, c) : splitArgs(a, b);
      const { title, url, path, referrer: ref, search } = pageContext(win, redact, referrer);
      const properties: Properties = { title, url, path, referrer: ref, search, ...(named && a ? { name: a } : {}), ...props };
      for (const key of ['url', 'referrer', 'search']) {
        const value = properties[key];
        if (typeof value === 'string') properties[key] = redact(value);
      }
      emit('page', { properties }, cb);
    },

    screen(name, properties, callback) {
      need();
      const [props, cb] = splitArgs(properties, callback);
      if (typeof name !== 'string' || !name.trim()) return reject(cb, invalid('screen() needs a screen name'));
      emit('screen', { properties: { ...props, name } }, cb);
    },

    alias(userId, previousId, callback) {
      need();
      const cb = typeof previousId === 'function' ? previousId : callback;
      const id = asId(userId);
      const given = typeof previousId === 'function' ? undefined : asId(previousId);
      const previous = given ?? identity.userId() ?? identity.anonymousId();
      if (!isValidIdentifier(id)) return reject(cb, invalid('alias() needs a real user id'));
      if (!isValidIdentifier(previous)) return reject(cb, invalid('alias() got an illegal previousId'));
      emit('alias', { userId: id, previousId: previous }, cb);
    },

    group(groupId, traits, callback) {
      need();
      const [t, cb] = splitArgs(traits, callback);
      const id = asId(groupId);
      if (typeof id !== 'string' || !id.trim() || [...id].length > MAX_ID_LENGTH) return reject(cb, invalid('group() needs a group id'));
      emit('group', { groupId: id, traits: t }, cb);
    },

    reset() {
      need();
      identity.reset();
      session.reset();
      store.remove(`${prefix}referrers`);
      store.remove(`${prefix}campaign`);
      fingerprint = undefined;
      plugins.onReset();
      log('reset');
    },

    getAnonymousId: () => (need(), identity.anonymousId()),
    getUserId: () => (need(), identity.userId()),

    flush(callback) {
      need();
      return delivery.flush().then(() => callback?.());
    },

    ready: () => ready,

    setEnabled(enabled) {
      need();
      manualEnabled = !!enabled;
      if (!enabled) clearQueue('disabled with setEnabled(false)');
      else if (isEnabled()) delivery.schedule();
      else log('still disabled by a privacy signal or an analytics denial');
    },

    isEnabled,

    setDebug(enabled) {
      debug = !!enabled;
    },

    use(plugin) {
      if (!plugins.add(plugin)) return log(`plugin ${plugin.name} already registered`);
      if (cfg) void plugins.initialize([plugin], client);
    },

    consent: {
      grant: (purpose) => decide(purpose, true, 'sdk'),
      deny: (purpose) => decide(purpose, false, 'sdk'),
      hasConsent: (purpose) => (need(), consent.get(purpose) === true),
      showBanner(config) {
        need();
        const purposes = (config?.purposes ?? ['analytics', 'fingerprinting']).filter(isPurpose);
        if (typeof config?.render !== 'function') return log('showBanner(): no UI in this library; pass render(controls)');
        config.render({ purposes, grant: (p) => decide(p, true, 'banner'), deny: (p) => decide(p, false, 'banner') });
      },
    },
  };
  return client;
}
