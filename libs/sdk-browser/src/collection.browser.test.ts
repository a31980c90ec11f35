/** Automatic collection, identity, sessions and init errors in real Chromium. */
import { beforeEach, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describeInBrowser, fixture, sleep } from './test-support/browser';

const ANON = /^anon_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describeInBrowser('collection (browser)', (h) => {
  beforeEach(() => h.server.reset());

  it('tracks the first pageview with auto-filled page fields and the enriched context', async () => {
    h.server.serve('/landing', fixture(h.server, { title: 'Landing page' }));
    const page = await h.open('/landing?utm_campaign=launch&utm_source=news&gclid=abc');
    await page.evaluate('svc.flush()');
    const [view] = h.server.events();
    const o = h.server.origin;
    expect(view).toMatchObject({
      type: 'page',
      anonymousId: expect.stringMatching(ANON),
      messageId: expect.any(String),
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      properties: { title: 'Landing page', url: `${o}/landing?utm_campaign=launch&utm_source=news&gclid=abc`, path: '/landing', referrer: '', search: '?utm_campaign=launch&utm_source=news&gclid=abc' },
    });
    expect(view?.context).toMatchObject({
      page: { title: 'Landing page', path: '/landing', hash: '', language: 'en' },
      campaign: { name: 'launch', source: 'news', gclid: 'abc' },
      session: { id: expect.any(String), page_views: 1, events_count: 1, is_new_session: true },
      library: { name: '@svc/sdk-browser', version: '1.5.0' },
      browser: { name: expect.stringMatching(/^Chrome/) },
      os: { name: 'Linux' },
      device: { type: 'desktop' },
      screen: { width: expect.any(Number), height: expect.any(Number), density: expect.any(Number), viewport: { innerWidth: expect.any(Number), innerHeight: expect.any(Number) } },
      network: expect.objectContaining({ online: true }),
      locale: expect.any(String),
      timezone: expect.any(String),
      timezone_offset_mins: expect.any(Number),
      user_agent: expect.stringContaining('Chrome'),
    });
  });

  it('tracks route changes through the history API and the hash', async () => {
    h.server.serve('/app', fixture(h.server, { title: 'App' }));
    const page = await h.open('/app');
    await page.evaluate("history.pushState({}, '', '/app/settings'); document.title = 'Settings'");
    await sleep(100);
    await page.evaluate("location.hash = '#billing'");
    await sleep(100);
    await page.evaluate("history.replaceState({}, '', location.href)"); // same URL: no pageview
    await page.evaluate('svc.flush()');
    const pages = h.server.events().map((e) => e.properties as Record<string, string>);
    const o = h.server.origin;
    expect(pages.map((p) => [p.path, p.title, p.url, p.referrer])).toEqual([
      ['/app', 'App', `${o}/app`, ''],
      ['/app/settings', 'Settings', `${o}/app/settings`, `${o}/app`],
      ['/app/settings', 'Settings', `${o}/app/settings#billing`, `${o}/app/settings`],
    ]);
  });

  it('captures clicks on links and buttons with their attributes, honouring data-svc-track and data-svc-no-capture', async () => {
    const body = `
      <a id="buy" class="btn primary" href="/checkout?coupon=SPRING&token=abc" onclick="event.preventDefault()">Buy now</a>
      <button id="signup" data-svc-track="Signup Clicked"><span id="inner">Sign up</span></button>
      <div data-svc-no-capture><button id="private">Private</button></div>
      <button id="card">4111 1111 1111 1111</button>
      <input id="pw" type="password" data-svc-track="Password Field">
      <input id="send" type="submit" value="Send">
      <p id="plain">not a button</p>`;
    h.server.serve('/clicks', fixture(h.server, { config: { trackPages: false, trackClicks: true }, body }));
    h.server.serve('/clicks-full', fixture(h.server, { config: { trackPages: false, trackClicks: true, captureLinkQueryParams: true }, body }));
    const page = await h.open('/clicks');
    for (const id of ['buy', 'inner', 'private', 'card', 'pw', 'send', 'plain']) await page.click(`#${id}`);
    await page.evaluate('svc.flush()');
    const o = h.server.origin;
    expect(h.server.events().map((e) => [e.event, e.properties])).toEqual([
      ['$click', { element_type: 'a', element_text: 'Buy now', element_id: 'buy', element_class: 'btn primary', link_url: `${o}/checkout` }],
      ['Signup Clicked', { element_type: 'button', element_text: 'Sign up', element_id: 'signup' }],
      ['$click', { element_type: 'button', element_id: 'card' }],
      ['$click', { element_type: 'input', element_text: 'Send', element_id: 'send' }],
    ]);
    h.server.reset();
    await page.goto(`${o}/clicks-full`);
    await page.click('#buy');
    await page.evaluate('svc.flush()');
    expect(h.server.events()[0]?.properties).toMatchObject({ link_url: `${o}/checkout?coupon=SPRING&token=<redacted>` });
  });

  it('adopts a valid cross-domain aid only when no id is stored', async () => {
    h.server.serve('/aid', fixture(h.server, { config: { trackPages: false } }));
    const aid = 'anon_3b241101-e2bb-4255-8caf-4136c566a962';
    const page = await h.open(`/aid?aid=${aid}`);
    expect(await page.evaluate('svc.getAnonymousId()')).toBe(aid);
    await page.goto(`${h.server.origin}/aid?aid=anon_9f1c2e44-8a3b-4c5d-9e6f-0a1b2c3d4e5f`);
    expect(await page.evaluate('svc.getAnonymousId()')).toBe(aid);
    const other = await h.open('/aid?aid=null');
    const minted = await other.evaluate<string>('svc.getAnonymousId()');
    expect(minted).toMatch(ANON);
    expect(await other.evaluate("localStorage.getItem('svc_anonymous_id')")).toBe(minted);
  });

  it('starts a new session after the idle timeout', async () => {
    h.server.serve('/session', fixture(h.server, { config: { trackPages: false, sessionTimeout: 0.01 } })); // 600 ms
    const page = await h.open('/session');
    await page.evaluate("svc.track('a')");
    await sleep(1000);
    await page.evaluate("svc.track('b'); svc.track('c'); svc.flush()");
    const [a, b, c] = h.server.events().map((e) => e.context.session as { id: string; is_new_session: boolean; events_count: number });
    expect(a?.id).not.toBe(b?.id);
    expect(b).toMatchObject({ is_new_session: true, events_count: 1 });
    expect(c).toMatchObject({ id: b?.id, is_new_session: false, events_count: 2 });
  });

  it('throws before init and on a bad configuration; init is idempotent', async () => {
    h.server.serve('/noinit', fixture(h.server, { noInit: true }));
    const page = await h.open('/noinit');
    const attempt = (code: string): Promise<string> => page.evaluate<string>(`(() => { try { ${code}; return 'ok'; } catch (e) { return e.message; } })()`);
    expect(await attempt("svc.track('x')")).toBe('svc: call init() first');
    expect(await attempt(`svc.init({ apiHost: '${h.server.apiHost}' })`)).toBe('svc: writeKey is required');
    expect(await attempt("svc.init({ writeKey: 'uk_live_x' })")).toBe('svc: apiHost is required');
    expect(await attempt("svc.init({ writeKey: 'uk_live_x', apiHost: 'http://api.example.com/functions/v1' })")).toMatch(/must use HTTPS/);
    expect(await attempt(`svc.init({ writeKey: 'uk_live_x', apiHost: '${h.server.apiHost}', trackPages: false })`)).toBe('ok');
    expect(await attempt("svc.init({ writeKey: 'uk_live_y', apiHost: 'https://elsewhere.example' })")).toBe('ok');
    await page.evaluate("svc.track('after'); svc.flush()");
    expect(h.server.batches.map((b) => b.headers.authorization)).toEqual(['Bearer uk_live_x']);
  });

  it('the README loader snippet queues calls until the script arrives, then replays them', async () => {
    const readme = readFileSync(path.resolve(__dirname, '../README.md'), 'utf8');
    const snippet = /<!-- snippet:start -->\s*```html\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(snippet).toBeDefined();
    const html = (snippet ?? '')
      .replace("'/static/svc.min.js'", "'/svc.min.js'")
      .replace("svc.init({ writeKey: 'uk_live_…', apiHost: 'https://api.example.com/functions/v1' });", `svc.init({ writeKey: 'uk_live_snippet', apiHost: '${h.server.apiHost}' }); svc.track('early', { queued: true }); svc.consent.grant('analytics');`);
    h.server.serve('/snippet', `<!doctype html><html><head><title>Snippet</title>${html}</head><body></body></html>`);
    const page = await h.open('/snippet');
    await page.waitForFunction('window.svc && typeof window.svc.flush === "function"');
    await page.evaluate('svc.flush()');
    expect(h.server.events().map((e) => e.event ?? e.type)).toEqual(['page', 'early']);
    expect(h.server.batches[0]?.headers.authorization).toBe('Bearer uk_live_snippet');
    await h.server.waitFor(() => h.server.consents.length, 'the consent record');
  });
});
