/**
 * The browser library's React example (libs/sdk-browser/examples/react, the
 * app of its React and Next.js guide), built with esbuild as an app would be,
 * in Debian's headless Chromium against the real standalone stack: the
 * library is initialised once (under StrictMode), the consent banner's Accept
 * is recorded and carried on the events after it, and every route change of
 * the app's router is a page view that reaches the stack, read back through
 * the Profiles API.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeEndToEnd, poll, startShop, type Shop } from './test-support/browser-e2e';

const EXAMPLE = path.join(path.dirname(require.resolve('@svc/sdk-browser/package.json')), 'examples/react');

interface StoredEvent {
  event_name: string;
  event_timestamp: string;
  context: { page?: { path?: string }; consent?: Record<string, unknown> };
}

describeEndToEnd('the React example app → standalone stack → Profiles API (headless Chromium)', () => {
  let shop: Shop | undefined;
  const out = mkdtempSync(path.join(os.tmpdir(), 'svc-react-example-'));
  const pageProblems: string[] = [];

  beforeAll(async () => {
    shop = await startShop('react-example');
    const { e2e, fixture, writeKey } = shop;
    // Built as its README says, with this stack's address and key.
    execFileSync(process.execPath, [path.join(EXAMPLE, 'build.mjs'), '--out', path.join(out, 'app.js'), '--write-key', writeKey, '--api-host', e2e.apiHost]);
    fixture.serve('/app.js', readFileSync(path.join(out, 'app.js'), 'utf8'), 'text/javascript');
    // A single-page app: every route serves the same page.
    for (const route of ['/', '/pricing', '/checkout']) fixture.serve(route, readFileSync(path.join(EXAMPLE, 'index.html'), 'utf8'));
  }, 90_000);

  afterAll(async () => {
    rmSync(out, { recursive: true, force: true });
    await shop?.stop();
  }, 60_000);

  it('type-checks, as the guide’s code should', () => {
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(EXAMPLE, 'tsconfig.json')]);
  });

  it('the first page view, then after Accept one per route change and the purchase, on one profile', async () => {
    const { e2e, fixture, api, orgId } = shop!;
    const context = await e2e.browser.newContext();
    const tab = await context.newPage();
    tab.on('pageerror', (err) => pageProblems.push(`pageerror: ${err.message}`));
    tab.on('console', (m) => {
      if (m.type() === 'error') pageProblems.push(`console.error: ${m.text()}`);
    });
    await tab.goto(`${fixture.origin}/`);
    await tab.click('#accept');
    await tab.click('text=Pricing');
    await tab.waitForSelector('h1:has-text("Pricing")');
    await tab.click('text=Checkout');
    await tab.click('#buy');
    await tab.goBack();
    await tab.waitForSelector('h1:has-text("Pricing")');

    const profile = await poll('the visitor’s profile', async () => {
      const listed = await api('/v1-profiles');
      const profiles = listed.body.profiles as Array<{ id: string }> | undefined;
      return { value: profiles?.length ? profiles[0] : undefined, seen: { listed, pageProblems } };
    });
    const events = await poll('the page views and the purchase', async () => {
      const got = await api(`/v1-profiles/${profile.id}/events?limit=50`);
      const list = (got.body.events as StoredEvent[] | undefined) ?? [];
      return { value: list.length >= 5 ? list : undefined, seen: { got, pageProblems } };
    });
    const inOrder = [...events].sort((a, b) => a.event_timestamp.localeCompare(b.event_timestamp));
    // The first page view at init(), then one per route change (back included): the app sends none itself.
    expect(inOrder.map((e) => (e.event_name === '$pageview' ? `page ${e.context.page?.path}` : e.event_name))).toEqual([
      'page /',
      'page /pricing',
      'page /checkout',
      'Order Completed',
      'page /pricing',
    ]);
    // Once, under StrictMode's double render: one init(), one first page view. The decision rides on what follows it.
    expect(inOrder[0]!.context.consent).toBeUndefined();
    expect(inOrder.slice(1).every((e) => e.context.consent?.analytics === true)).toBe(true);
    // The banner's decision reached the consent API's store.
    const { rows } = (await e2e.t.db.raw('select count(*)::int as n from consent.records where org_id = ?', [orgId])) as { rows: Array<{ n: number }> };
    expect(rows[0]!.n).toBeGreaterThanOrEqual(1);
    expect(pageProblems).toEqual([]);
    await context.close();
  }, 60_000);
});
