/**
 * Segment's own browser library, unchanged, pointed at us: the UMD build of
 * `@segment/analytics-next` (npm, pinned) on a page in Debian's headless
 * Chromium, with its `Segment.io` settings given inline (no CDN) and its
 * apiHost at `{base_url}/segment/v1`, against the real standalone stack.
 * It posts each call to the first letter of its type (`/t`, `/p`, `/i`,
 * `/g`) with the write key in a `text/plain` body, or, batching, to `/b`;
 * what it sent is read back through the Profiles API.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeEndToEnd, poll, startShop, type Shop } from './test-support/browser-e2e';

const UMD = path.join(path.dirname(require.resolve('@segment/analytics-next/package.json')), 'dist/umd');

type Strategy = { strategy: 'standard' } | { strategy: 'batching'; config: { size: number; timeout: number } };

/** A page loading analytics-next from the fixture origin, with the Segment.io integration's settings inline. */
function page(writeKey: string, apiHost: string, cdnURL: string, deliveryStrategy: Strategy): string {
  const settings = {
    writeKey,
    cdnURL,
    cdnSettings: { integrations: { 'Segment.io': { apiKey: writeKey, apiHost, protocol: 'http', deliveryStrategy } } },
  };
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>analytics-next</title></head>
<body>
<script src="/ajs/index.js"></script>
<script>
  window.analytics = AnalyticsNext.AnalyticsBrowser.load(${JSON.stringify(settings)});
</script>
</body></html>`;
}

describeEndToEnd('Segment’s browser library (analytics-next) → standalone stack → Profiles API (headless Chromium)', () => {
  let shop: Shop | undefined;
  /** What the browser posted to the stack: the library's paths and content types. */
  const posted: string[] = [];
  const pageProblems: string[] = [];

  beforeAll(async () => {
    shop = await startShop('segment-browser');
    const { fixture, writeKey, e2e } = shop;
    // The build and its lazily loaded chunks, where the library looks for them (its own path, or cdnURL's bundles).
    for (const file of readdirSync(UMD).filter((f) => f.endsWith('.js'))) {
      const body = readFileSync(path.join(UMD, file), 'utf8');
      fixture.serve(`/ajs/${file}`, body, 'text/javascript');
      fixture.serve(`/analytics-next/bundles/${file}`, body, 'text/javascript');
    }
    const apiHost = `${new URL(e2e.stack.url).host}/functions/v1/segment/v1`;
    fixture.serve('/standard', page(writeKey, apiHost, fixture.origin, { strategy: 'standard' }));
    fixture.serve('/batching', page(writeKey, apiHost, fixture.origin, { strategy: 'batching', config: { size: 4, timeout: 300 } }));
  }, 60_000);

  afterAll(() => shop?.stop(), 60_000);

  it.each([['standard', ['/t', '/p', '/i', '/g']], ['batching', ['/b']]])('%s delivery: page, track, identify and group land on the user’s profile', async (strategy, paths) => {
    const { e2e, fixture, api } = shop!;
    const context = await e2e.browser.newContext();
    const tab = await context.newPage();
    tab.on('pageerror', (err) => pageProblems.push(`pageerror: ${err.message}`));
    tab.on('request', (req) => {
      const url = new URL(req.url());
      if (url.pathname.includes('/segment/v1/')) posted.push(`${strategy} ${req.method()} ${url.pathname.split('/segment/v1')[1]} ${req.headers()['content-type'] ?? ''}`);
    });
    const user = `user-${randomUUID().slice(0, 8)}`;
    await tab.goto(`${fixture.origin}/${strategy}`);
    await tab.evaluate(
      `Promise.all([
         analytics.page('Pricing', { path: '/pricing' }),
         analytics.track('Order Completed', { value: 42, currency: 'EUR' }),
         analytics.identify(${JSON.stringify(user)}, { email: ${JSON.stringify(`${user}@example.com`)}, plan: 'pro' }),
         analytics.group('grp-1', { name: 'Acme' }),
       ])`,
    );
    const anonymousId = await tab.evaluate<string>('analytics.instance.user().anonymousId()');

    const profile = await poll(`the profile of ${user}`, async () => {
      const found = await api(`/v1-profiles/search?user_id=${user}`);
      const profiles = found.body.profiles as Array<{ id: string }> | undefined;
      return { value: profiles?.length ? profiles[0] : undefined, seen: { found, posted, pageProblems } };
    });
    const events = await poll('all four events on the profile', async () => {
      const got = await api(`/v1-profiles/${profile.id}/events`);
      const list = got.body.events as Array<{ event_name: string; properties: Record<string, unknown>; context: Record<string, unknown> }>;
      return { value: list?.length === 4 ? list : undefined, seen: got };
    });
    expect(events.map((e) => e.event_name).sort()).toEqual(['$group', '$identify', '$pageview', 'Order Completed']);
    expect(events.find((e) => e.event_name === 'Order Completed')?.properties).toMatchObject({ value: 42, currency: 'EUR' });
    expect(events.find((e) => e.event_name === '$pageview')?.properties).toMatchObject({ name: 'Pricing', path: '/pricing' });
    // The library's own context: the page and the library, as it sent them.
    expect(events[0]!.context).toMatchObject({ library: { name: 'analytics.js' }, page: expect.objectContaining({ path: expect.any(String) }) });
    const identities = (await api(`/v1-profiles/${profile.id}/identities`)).body.identities as { signals: Array<{ signal_type: string; signal_value: string }> };
    expect(identities.signals).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ signal_type: 'anonymous_id', signal_value: anonymousId }),
        expect.objectContaining({ signal_type: 'email', signal_value: `${user}@example.com` }),
      ]),
    );
    // Where it posted, and how: its short paths, the key in a text/plain body.
    const mine = posted.filter((p) => p.startsWith(`${strategy} `));
    expect(new Set(mine.map((p) => p.split(' ')[2]))).toEqual(new Set(paths));
    expect(mine.every((p) => p.includes('POST') && p.includes('text/plain'))).toBe(true);
    expect(pageProblems).toEqual([]);
    await context.close();
  }, 60_000);
});
