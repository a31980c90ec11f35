import { describe, expect, it, jest } from '@jest/globals';
import { checkConsentDecision } from '@svc/contracts';
import { createClient } from './client';
import { FakeLocks, FakeStorage, FakeTab, type FakeTabOptions, flushMicrotasks } from './test-support/fake-env';
import type { SvcClient, SvcConfig, SvcError, SvcEvent } from './types';
import { VERSION } from './version';

const API = 'https://api.example.com/functions/v1';
const ANON = /^anon_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function start(tabOptions: FakeTabOptions = {}, config: Partial<SvcConfig> = {}): { tab: FakeTab; svc: SvcClient } {
  const tab = new FakeTab(tabOptions);
  const svc = createClient(() => tab.env);
  svc.init({ writeKey: 'uk_live_test', apiHost: API, ...config });
  return { tab, svc };
}

/** Runs a call whose callback fires later; resolves with what the callback got. */
function outcome(call: (cb: (error?: SvcError, response?: unknown) => void) => void): Promise<{ error?: SvcError; response?: unknown }> {
  return new Promise((resolve) => call((error, response) => resolve({ error, response })));
}

const sent = async (tab: FakeTab, svc: SvcClient): Promise<Array<Record<string, unknown>>> => {
  await svc.flush();
  return tab.events();
};

describe('client lifecycle', () => {
  it('throws from every method before init(), except use, setDebug, isEnabled and ready', () => {
    const svc = createClient(() => new FakeTab().env);
    const calls: Array<() => unknown> = [
      () => svc.identify('u1'),
      () => svc.track('x'),
      () => svc.page(),
      () => svc.screen('s'),
      () => svc.alias('u1'),
      () => svc.group('g'),
      () => svc.reset(),
      () => svc.getAnonymousId(),
      () => svc.getUserId(),
      () => svc.flush(),
      () => svc.setEnabled(true),
      () => svc.consent.grant('analytics'),
      () => svc.consent.deny('analytics'),
      () => svc.consent.hasConsent('analytics'),
      () => svc.consent.showBanner(),
    ];
    for (const call of calls) expect(call).toThrow('call init() first');
    expect(() => svc.use({ name: 'p' })).not.toThrow();
    expect(() => svc.setDebug(true)).not.toThrow();
    expect(svc.isEnabled()).toBe(false);
    expect(svc.ready()).toBeInstanceOf(Promise);
    expect(svc.VERSION).toBe('1.5.0');
  });

  it('init() throws on a missing writeKey or apiHost and on plain HTTP to a production host', () => {
    const svc = createClient(() => new FakeTab().env);
    expect(() => svc.init({ apiHost: API } as SvcConfig)).toThrow('writeKey is required');
    expect(() => svc.init({ writeKey: 'uk_live_x' } as SvcConfig)).toThrow('apiHost is required');
    expect(() => svc.init({ writeKey: 'uk_live_x', apiHost: 'http://api.example.com/functions/v1' })).toThrow('HTTPS');
    expect(svc.isEnabled()).toBe(false); // a failed init leaves it uninitialised
    svc.init({ writeKey: 'uk_live_x', apiHost: 'http://127.0.0.1:54321/functions/v1', trackPages: false });
    expect(svc.isEnabled()).toBe(true);
  });

  it('init() is idempotent: a second call changes nothing', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    svc.init({ writeKey: 'uk_live_other', apiHost: 'https://elsewhere.example' });
    svc.track('x');
    await svc.flush();
    expect(tab.sent).toHaveLength(1);
    expect(tab.sent[0]?.url).toBe(`${API}/v1-batch`);
    expect(tab.sent[0]?.init.headers.Authorization).toBe('Bearer uk_live_test');
  });

  it('ready() resolves once plugins and cross-tab adoption have settled', async () => {
    let initialized = false;
    const tab = new FakeTab();
    const svc = createClient(() => tab.env);
    svc.use({ name: 'slow', initialize: () => new Promise<void>((r) => setTimeout(() => ((initialized = true), r()), 10)) });
    const ready = svc.ready();
    svc.init({ writeKey: 'uk_live_test', apiHost: API });
    await ready;
    expect(initialized).toBe(true);
  });
});

describe('tracking methods', () => {
  it('tracks the first pageview with auto-filled, redacted page fields and the full context', async () => {
    const { tab, svc } = start({
      url: 'https://shop.example/landing?utm_source=news&utm_medium=email&gclid=G1&token=s3cret',
      referrer: 'https://mail.example/inbox?session=abc',
      title: 'Welcome',
    });
    const [page] = await sent(tab, svc);
    expect(page).toMatchObject({
      type: 'page',
      anonymousId: expect.stringMatching(ANON),
      messageId: expect.any(String),
      timestamp: '2026-03-01T12:00:00.000Z',
      properties: {
        title: 'Welcome',
        url: 'https://shop.example/landing?utm_source=news&utm_medium=email&gclid=G1&token=<redacted>',
        path: '/landing',
        referrer: 'https://mail.example/inbox?session=<redacted>',
        search: '?utm_source=news&utm_medium=email&gclid=G1&token=<redacted>',
      },
    });
    const ctx = page?.context as Record<string, unknown>;
    expect(Object.keys(ctx).sort()).toEqual(
      ['browser', 'campaign', 'device', 'library', 'locale', 'network', 'os', 'page', 'screen', 'session', 'timezone', 'timezone_offset_mins', 'user_agent'].sort(),
    );
    expect(ctx).toMatchObject({
      page: { url: expect.stringContaining('token=<redacted>'), path: '/landing', title: 'Welcome', hash: '', language: 'en' },
      campaign: {
        source: 'news',
        medium: 'email',
        gclid: 'G1',
        referrer_chain: [{ url: 'https://mail.example/inbox?session=<redacted>', timestamp: '2026-03-01T12:00:00.000Z' }],
      },
      session: { id: expect.any(String), page_views: 1, events_count: 1, is_new_session: true, started_at: '2026-03-01T12:00:00.000Z' },
      library: { name: '@svc/sdk-browser', version: VERSION },
      screen: { width: 1920, height: 1080, density: 2, viewport: { innerWidth: 1280, innerHeight: 720 } },
      network: { online: true },
      locale: 'en-US',
      browser: { name: 'Chrome', version: '126.0.0.0' },
      os: { name: 'Linux' },
      device: { type: 'desktop' },
    });
  });

  it('page() takes (name?, properties?, callback?) or (properties?, callback?); properties override', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    svc.page('Pricing', { title: 'Custom', url: 'https://shop.example/x?password=1' });
    const viaProps = outcome((cb) => svc.page({ section: 'docs' }, cb));
    svc.page();
    const viaCallbackOnly = outcome((cb) => svc.page(cb));
    await svc.flush();
    expect((await viaProps).error).toBeUndefined();
    expect((await viaCallbackOnly).response).toMatchObject({ success: true });
    const pages = tab.events().map((e) => e.properties as Record<string, unknown>);
    expect(pages[0]).toMatchObject({ name: 'Pricing', title: 'Custom', url: 'https://shop.example/x?password=<redacted>', path: '/products' });
    expect(pages[1]).toMatchObject({ section: 'docs', title: 'Test page', url: 'https://shop.example/products?id=7' });
    expect(pages[1]).not.toHaveProperty('name');
    expect(pages).toHaveLength(4);
  });

  it('identify persists id and traits; sentinel and missing ids are rejected through the callback and never sent', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    for (const bad of ['', 'null', '[object Object]', undefined, 'x'.repeat(201)]) {
      const { error } = await outcome((cb) => svc.identify(bad as string, {}, cb));
      expect(error).toMatchObject({ code: 'invalid_argument' });
    }
    expect(svc.getUserId()).toBeNull();
    const ok = outcome((cb) => svc.identify('user-42', { plan: 'pro' }, cb));
    svc.identify('user-42', { name: 'Ada' });
    await svc.flush();
    expect((await ok).response).toMatchObject({ success: true });
    expect(svc.getUserId()).toBe('user-42');
    expect(tab.storage.getItem('svc_user_id')).toBe('user-42');
    expect(JSON.parse(tab.storage.getItem('svc_user_traits') ?? '{}')).toEqual({ plan: 'pro', name: 'Ada' });
    const events = tab.events();
    expect(events).toHaveLength(2);
    expect(events[1]).toMatchObject({ type: 'identify', userId: 'user-42', traits: { plan: 'pro', name: 'Ada' } });
    svc.track('after');
    expect((await sent(tab, svc)).at(-1)).toMatchObject({ type: 'track', event: 'after', userId: 'user-42' });
  });

  it('track requires an event name of at most 200 characters', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    expect((await outcome((cb) => svc.track('', {}, cb))).error?.code).toBe('invalid_argument');
    expect((await outcome((cb) => svc.track('x'.repeat(201), cb))).error?.code).toBe('invalid_argument');
    const ok = outcome((cb) => svc.track('Order Completed', cb));
    await svc.flush();
    expect((await ok).error).toBeUndefined();
    expect(tab.events()).toEqual([expect.objectContaining({ type: 'track', event: 'Order Completed', properties: {} })]);
  });

  it('screen requires a name and carries it in properties', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    expect((await outcome((cb) => svc.screen('', {}, cb))).error?.code).toBe('invalid_argument');
    expect((await outcome((cb) => svc.screen(undefined as unknown as string, cb))).error?.code).toBe('invalid_argument');
    svc.screen('Checkout', { step: 2 });
    expect(await sent(tab, svc)).toEqual([expect.objectContaining({ type: 'screen', properties: { step: 2, name: 'Checkout' } })]);
  });

  it('alias defaults previousId to the user id, else the anonymous id, and rejects illegal ids', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    const anon = svc.getAnonymousId();
    svc.alias('user-1');
    svc.identify('user-1');
    svc.alias('user-2');
    svc.alias('user-3', 'legacy-7');
    expect((await outcome((cb) => svc.alias('null', cb))).error?.code).toBe('invalid_argument');
    expect((await outcome((cb) => svc.alias('user-4', 'undefined', cb))).error?.code).toBe('invalid_argument');
    const aliases = (await sent(tab, svc)).filter((e) => e.type === 'alias');
    expect(aliases.map((e) => [e.userId, e.previousId])).toEqual([
      ['user-1', anon],
      ['user-2', 'user-1'],
      ['user-3', 'legacy-7'],
    ]);
  });

  it('group requires a group id', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    expect((await outcome((cb) => svc.group('  ', cb))).error?.code).toBe('invalid_argument');
    svc.group('acme', { plan: 'enterprise' });
    expect(await sent(tab, svc)).toEqual([expect.objectContaining({ type: 'group', groupId: 'acme', traits: { plan: 'enterprise' } })]);
  });

  it('reset drops the user, mints a new anonymous id and session, and clears referrer chain and attribution', async () => {
    const { tab, svc } = start({ url: 'https://shop.example/?utm_source=ads', referrer: 'https://search.example/' }, { trackPages: false });
    svc.identify('user-1', { plan: 'pro' });
    svc.track('before');
    const before = await sent(tab, svc);
    const oldAnon = svc.getAnonymousId();
    tab.navigate('/next'); // attribution now comes from storage
    svc.reset();
    expect(svc.getUserId()).toBeNull();
    expect(svc.getAnonymousId()).toMatch(ANON);
    expect(svc.getAnonymousId()).not.toBe(oldAnon);
    expect(tab.storage.getItem('svc_user_traits')).toBeNull();
    svc.track('after');
    const after = (await sent(tab, svc)).at(-1) as unknown as SvcEvent;
    expect(after.userId).toBeUndefined();
    expect(after.anonymousId).toBe(svc.getAnonymousId());
    expect(after.context.session?.id).not.toBe((before[1] as unknown as SvcEvent).context.session?.id);
    expect(after.context.session?.is_new_session).toBe(true);
    expect(after.context.campaign).toBeUndefined();
  });

  it('keeps session attribution from the landing URL on later pages of the same session', async () => {
    const { tab, svc } = start({ url: 'https://shop.example/?utm_campaign=spring&fbclid=F' }, { trackPages: false });
    svc.track('landing');
    tab.navigate('/cart');
    svc.track('cart');
    const [landing, cart] = await sent(tab, svc);
    expect((landing as unknown as SvcEvent).context.campaign).toEqual({ name: 'spring', fbclid: 'F' });
    expect((cart as unknown as SvcEvent).context.campaign).toEqual({ name: 'spring', fbclid: 'F' });
  });

  it('starts a new session after sessionTimeout minutes idle', async () => {
    const { tab, svc } = start({}, { trackPages: false, sessionTimeout: 1 });
    svc.track('a');
    await tab.clock.advance(59_000);
    svc.track('b');
    await tab.clock.advance(61_000);
    svc.track('c');
    const ids = (await sent(tab, svc)).map((e) => (e as unknown as SvcEvent).context.session?.id);
    expect(ids[0]).toBe(ids[1]);
    expect(ids[2]).not.toBe(ids[1]);
  });
});

describe('identity', () => {
  it('persists anon_<uuid> under storagePrefix', () => {
    const storage = new FakeStorage();
    const { svc } = start({ storage }, { storagePrefix: 'acme_', trackPages: false });
    expect(svc.getAnonymousId()).toMatch(ANON);
    expect(storage.getItem('acme_anonymous_id')).toBe(svc.getAnonymousId());
    expect(start({ storage }, { storagePrefix: 'acme_', trackPages: false }).svc.getAnonymousId()).toBe(svc.getAnonymousId());
  });

  it('adopts a valid cross-domain aid only when no id is stored', () => {
    const aid = 'anon_3b241101-e2bb-4255-8caf-4136c566a962';
    expect(start({ url: `https://shop.example/?aid=${aid}` }).svc.getAnonymousId()).toBe(aid);
    expect(start({ url: 'https://shop.example/?aid=anon_nope' }).svc.getAnonymousId()).not.toBe('anon_nope');
    expect(start({ url: 'https://shop.example/?aid=null' }).svc.getAnonymousId()).toMatch(ANON);
    const storage = new FakeStorage();
    const existing = start({ storage }).svc.getAnonymousId();
    expect(start({ storage, url: `https://shop.example/?aid=${aid}` }).svc.getAnonymousId()).toBe(existing);
  });
});

describe('delivery through the client', () => {
  it('fires callbacks once with the ingestion result, and reports per-event rejections', async () => {
    const reported: Array<[string, unknown[]]> = [];
    const { tab, svc } = start({}, { trackPages: false, flushAt: 2, onError: (e, d) => reported.push([(e as SvcError).code, d.map((x) => x.event)]) });
    tab.reply = (s) => {
      const ids = (s.body.batch ?? []).map((e) => String(e.messageId));
      return { status: 200, body: { success: false, processed: 1, failed: 1, errors: [`${ids[1]}: event name too long`], duration_ms: 3 } };
    };
    const a = outcome((cb) => svc.track('a', {}, cb));
    const b = outcome((cb) => svc.track('b', {}, cb));
    await svc.flush();
    expect((await a).response).toMatchObject({ processed: 1, failed: 1 });
    expect((await a).error).toBeUndefined();
    expect((await b).error).toMatchObject({ code: 'event_failed', message: expect.stringContaining('event name too long') });
    expect(reported).toEqual([['event_failed', ['b']]]);
  });

  it('drops a batch on 4xx and reports it to onError and the callbacks', async () => {
    const errors: Array<[string, string[]]> = [];
    const { tab, svc } = start({}, { trackPages: false, onError: (e, dropped) => errors.push([(e as SvcError).code, dropped.map((d) => String(d.event))]) });
    tab.reply = () => ({ status: 401, body: { success: false, error: 'Invalid or expired API key' } });
    const result = outcome((cb) => svc.track('a', cb));
    await svc.flush();
    expect((await result).error).toMatchObject({ code: 'rejected', status: 401, message: 'svc: rejected with 401: Invalid or expired API key' });
    expect(errors).toEqual([['rejected', ['a']]]);
    expect(tab.sent).toHaveLength(1);
  });

  it('retries 5xx with the same messageIds', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    const replies = [503, 500, 200];
    tab.reply = () => ({ status: replies.shift() ?? 200, body: { success: true, processed: 1, failed: 0 } });
    svc.track('a');
    const flushed = svc.flush();
    await tab.clock.advance(10_000);
    await flushed;
    expect(tab.sent.map((s) => s.body.batch?.[0]?.messageId)).toEqual(Array(3).fill(tab.sent[0]?.body.batch?.[0]?.messageId));
  });

  it('takes over events a closed tab left behind, exactly once', async () => {
    const storage = new FakeStorage();
    const locks = new FakeLocks();
    const first = start({ storage, locks, reply: () => ({ status: 503 }) }, { trackPages: false, maxRetries: 0 });
    await first.svc.ready();
    first.tab.reply = () => new Promise(() => undefined); // never answers: the events stay queued
    first.svc.track('left-behind');
    first.svc.track('also');
    const bucketKey = [...storage.map.keys()].find((k) => k.startsWith('svc_queue_'));
    expect(bucketKey).toBeDefined();
    locks.release(`svc_tab_${bucketKey?.slice('svc_queue_'.length)}`); // the tab is gone
    const second = start({ storage, locks }, { trackPages: false });
    const third = start({ storage, locks }, { trackPages: false });
    await Promise.all([second.svc.ready(), third.svc.ready()]);
    await Promise.all([second.svc.flush(), third.svc.flush()]);
    const delivered = [...second.tab.events(), ...third.tab.events()].map((e) => e.event);
    expect(delivered.sort()).toEqual(['also', 'left-behind']);
  });
});

describe('consent', () => {
  it('hasConsent is synchronous and local; decisions are stored first, then POSTed as a ConsentDecision', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    expect(svc.consent.hasConsent('analytics')).toBe(false);
    svc.identify('user-1');
    svc.consent.grant('analytics');
    expect(svc.consent.hasConsent('analytics')).toBe(true);
    expect(JSON.parse(tab.storage.getItem('svc_consent') ?? '{}')).toMatchObject({ analytics: { g: true } });
    svc.consent.deny('fingerprinting');
    await flushMicrotasks();
    const records = tab.consentRecords();
    expect(records).toEqual([
      { anonymousId: svc.getAnonymousId(), userId: 'user-1', purposes: { analytics: true }, source: 'sdk', timestamp: '2026-03-01T12:00:00.000Z' },
      { anonymousId: svc.getAnonymousId(), userId: 'user-1', purposes: { fingerprinting: false }, source: 'sdk', timestamp: '2026-03-01T12:00:00.000Z' },
    ]);
    for (const r of records) expect(checkConsentDecision(r)).toMatchObject({ ok: true });
    expect(tab.sent.find((s) => s.url === `${API}/v1-consent`)?.init.keepalive).toBe(true);
    expect(() => svc.consent.grant('marketing' as 'analytics')).toThrow('unknown consent purpose');
  });

  it('showBanner draws nothing itself; decisions made through render() are recorded with source banner', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    expect(() => svc.consent.showBanner()).not.toThrow();
    svc.consent.showBanner({ purposes: ['analytics'], render: (controls) => (expect(controls.purposes).toEqual(['analytics']), controls.grant('analytics')) });
    await flushMicrotasks();
    expect(tab.consentRecords()).toEqual([expect.objectContaining({ purposes: { analytics: true }, source: 'banner' })]);
  });

  it('advisory mode records a denial but keeps capturing, with the decision in context', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    svc.consent.deny('analytics');
    expect(svc.isEnabled()).toBe(true);
    svc.track('still');
    expect(await sent(tab, svc)).toEqual([expect.objectContaining({ event: 'still', context: expect.objectContaining({ consent: { analytics: false } }) })]);
  });

  it('enforced mode: deny clears the queue and drops events; grant re-enables and overrides setEnabled(false)', async () => {
    const { tab, svc } = start({}, { trackPages: false, consentMode: 'enforced' });
    const queued = outcome((cb) => svc.track('queued', cb));
    svc.consent.deny('analytics');
    expect((await queued).error?.code).toBe('cleared');
    expect(svc.isEnabled()).toBe(false);
    expect((await outcome((cb) => svc.track('dropped', cb))).error?.code).toBe('disabled');
    svc.setEnabled(false);
    svc.consent.grant('analytics');
    expect(svc.isEnabled()).toBe(true);
    svc.track('back');
    expect((await sent(tab, svc)).map((e) => e.event)).toEqual(['back']);
  });

  it('enforced mode honours a denial from an earlier session at the next init', async () => {
    const storage = new FakeStorage();
    start({ storage }, { consentMode: 'enforced', trackPages: false }).svc.consent.deny('analytics');
    const { tab, svc } = start({ storage }, { consentMode: 'enforced' });
    expect(svc.isEnabled()).toBe(false);
    await svc.flush();
    expect(tab.events()).toEqual([]); // not even the first pageview
    const advisory = start({ storage }, { consentMode: 'advisory', trackPages: false });
    expect(advisory.svc.isEnabled()).toBe(true);
  });

  it('DNT (when respected) and GPC disable the client at init, and grant does not lift them', async () => {
    const gpc = start({ globalPrivacyControl: true }, { consentMode: 'enforced' });
    expect(gpc.svc.isEnabled()).toBe(false);
    gpc.svc.consent.grant('analytics');
    gpc.svc.setEnabled(true);
    expect(gpc.svc.isEnabled()).toBe(false);
    gpc.svc.track('x');
    await gpc.svc.flush();
    expect(gpc.tab.events()).toEqual([]);
    expect(start({ globalPrivacyControl: true }, { respectGPC: false }).svc.isEnabled()).toBe(true);
    expect(start({ doNotTrack: '1' }).svc.isEnabled()).toBe(true);
    expect(start({ doNotTrack: '1' }, { respectDNT: true }).svc.isEnabled()).toBe(false);
    const gpcOnly = start({ globalPrivacyControl: true }, { respectGPC: false, trackPages: false });
    gpcOnly.svc.track('x');
    expect((await sent(gpcOnly.tab, gpcOnly.svc))[0]).toMatchObject({ context: expect.objectContaining({ gpc: true }) });
  });

  it('attaches the fingerprint only with fingerprinting consent, in either mode', async () => {
    for (const consentMode of ['advisory', 'enforced'] as const) {
      const { tab, svc } = start({}, { trackPages: false, enableFingerprinting: true, consentMode });
      svc.track('before');
      svc.consent.grant('fingerprinting');
      svc.track('granted');
      svc.consent.deny('fingerprinting');
      svc.track('denied');
      const ctx = (await sent(tab, svc)).map((e) => (e as unknown as SvcEvent).context);
      expect(ctx.map((c) => c.fingerprint?.hash)).toEqual([undefined, expect.stringMatching(/^[0-9a-f]{14}$/), undefined]);
      expect(ctx[1]?.consent).toEqual({ fingerprinting: true });
      expect(ctx[1]?.fingerprint?.components).toMatchObject({ userAgent: expect.any(String), timezone: expect.any(String) });
    }
    const off = start({}, { trackPages: false });
    off.svc.consent.grant('fingerprinting');
    off.svc.track('x');
    expect((await sent(off.tab, off.svc))[0]?.context).not.toHaveProperty('fingerprint');
  });
});

describe('enable switch and plugins', () => {
  it('setEnabled(false) clears the queue and drops further events', async () => {
    const { tab, svc } = start({}, { trackPages: false });
    const queued = outcome((cb) => svc.track('queued', cb));
    svc.setEnabled(false);
    expect((await queued).error?.code).toBe('cleared');
    svc.track('dropped');
    svc.setEnabled(true);
    svc.track('kept');
    expect((await sent(tab, svc)).map((e) => e.event)).toEqual(['kept']);
  });

  it('plugins registered before init see the first pageview; beforeTrack can drop or replace; hooks fire', async () => {
    const tab = new FakeTab();
    const svc = createClient(() => tab.env);
    const calls: string[] = [];
    const afterTrack = jest.fn();
    svc.use({
      name: 'filter',
      initialize: (client) => void calls.push(`init:${client.VERSION}`),
      beforeTrack: (e) => (e.event === 'secret' ? null : { ...e, properties: { ...e.properties, enriched: true } }),
      onIdentify: (id) => void calls.push(`identify:${id}`),
      onReset: () => void calls.push('reset'),
      afterTrack,
    });
    svc.init({ writeKey: 'uk_live_test', apiHost: API });
    await svc.ready();
    const dropped = outcome((cb) => svc.track('secret', cb));
    svc.track('open');
    svc.identify('u1');
    svc.reset();
    expect((await dropped).error).toMatchObject({ code: 'dropped_by_plugin' });
    const events = await sent(tab, svc);
    expect(events.map((e) => [e.type, (e.properties as Record<string, unknown> | undefined)?.enriched])).toEqual([
      ['page', true],
      ['track', true],
      ['identify', true],
    ]);
    expect(calls).toEqual(['init:1.5.0', 'identify:u1', 'reset']);
    expect(afterTrack).not.toHaveBeenCalled();
  });
});

describe('automatic collection', () => {
  it('tracks route changes with the previous URL as referrer, once per URL', async () => {
    const { tab, svc } = start({ url: 'https://app.example/home' });
    tab.win.history?.pushState({}, '', '/settings?token=abc');
    await tab.clock.advance(0);
    tab.win.history?.replaceState({}, '', '/settings?token=abc'); // same URL: no pageview
    await tab.clock.advance(0);
    tab.navigate('#billing');
    tab.win.dispatch('hashchange');
    await tab.clock.advance(0);
    const pages = (await sent(tab, svc)).map((e) => e.properties as Record<string, string>);
    expect(pages.map((p) => [p.path, p.url, p.referrer])).toEqual([
      ['/home', 'https://app.example/home', ''],
      ['/settings', 'https://app.example/settings?token=<redacted>', 'https://app.example/home'],
      ['/settings', 'https://app.example/settings?token=<redacted>#billing', 'https://app.example/settings?token=<redacted>'],
    ]);
  });

  it('captures clicks only when trackClicks is on', async () => {
    const button = { tagName: 'BUTTON', id: 'go', textContent: 'Go', parentElement: null, getAttribute: (n: string) => (n === 'id' ? 'go' : null) };
    const on = start({}, { trackPages: false, trackClicks: true });
    on.tab.doc.dispatch('click', { target: button });
    on.tab.doc.dispatch('click', { target: { textContent: 'text node', parentElement: button } });
    expect((await sent(on.tab, on.svc)).map((e) => [e.event, e.properties])).toEqual([
      ['$click', { element_type: 'button', element_text: 'Go', element_id: 'go' }],
      ['$click', { element_type: 'button', element_text: 'Go', element_id: 'go' }],
    ]);
    const off = start({}, { trackPages: false });
    off.tab.doc.dispatch('click', { target: button });
    expect(await sent(off.tab, off.svc)).toEqual([]);
  });

  it('registers pagehide and visibilitychange, never unload', () => {
    const { tab } = start();
    expect([...tab.win.listeners.keys()].sort()).toEqual(['hashchange', 'pagehide', 'popstate']);
    expect([...tab.doc.listeners.keys()]).toEqual(['visibilitychange']);
  });

  it('sends the queue with keepalive when the page is hidden', async () => {
    const { tab } = start({}, { flushInterval: 60_000 });
    tab.hide();
    await flushMicrotasks();
    expect(tab.sent.map((s) => [s.init.keepalive, s.body.batch?.length])).toEqual([[true, 1]]);
  });
});
