/**
 * End to end (issue 19): no event is lost at page exit. The browser library's
 * script-tag build, in headless Chromium, posts through the fixture origin's
 * relay to the real standalone stack (see test-support/), and the relay loses
 * the exit request a test chooses. What went over the wire is read from the
 * relay; what the stack stored, through the Profiles API: each event once,
 * whatever the network did.
 */
import { afterAll, beforeAll, beforeEach, expect, it } from '@jest/globals';
import type { BrowserContext } from 'playwright-core';
import { eventIdFor } from '@svc/identity';
import { AccountsStore } from '@svc/accounts';
import { describeEndToEnd, fixturePage, poll, startEndToEnd, type EndToEnd, type SentEvent, type StoredEvent } from './test-support/browser-e2e';
import { FixtureRelay, type Loss } from './test-support/fixture-relay';

const DAY = 24 * 3600 * 1000;

/** A shop of its own for each test: an organisation (its stored events and rate limits apart), its read key and its page. */
interface Shop {
  orgId: string;
  readKey: string;
  url: string;
}

describeEndToEnd('browser library → lossy network → standalone stack: nothing lost at page exit (headless Chromium)', () => {
  let e2e: EndToEnd;
  let relay: FixtureRelay;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    e2e = await startEndToEnd('sdk-exit');
    relay = await new FixtureRelay(e2e.stack.url).start();
    relay.serve('/svc.min.js', e2e.bundle, 'text/javascript');
    relay.serve('/blank', '<!doctype html><title>blank</title><p>blank</p>');
  }, 60_000);

  beforeEach(() => relay.reset());

  afterAll(async () => {
    try {
      for (const context of contexts) await context.close().catch(() => undefined);
      await relay?.close();
    } finally {
      await e2e?.stop();
    }
  }, 60_000);

  const newContext = async (): Promise<BrowserContext> => {
    const context = await e2e.browser.newContext();
    contexts.push(context);
    return context;
  };

  const openShop = async (name: string): Promise<Shop> => {
    const accounts = new AccountsStore(e2e.t.db);
    const { id: orgId } = await accounts.createOrganization({ name });
    const writeKey = (await accounts.createApiKey({ orgId, type: 'write' })).key;
    const readKey = (await accounts.createApiKey({ orgId, type: 'read' })).key;
    // Nothing leaves before the page does: no pageview, no size- or timer-triggered sends.
    relay.serve(`/${name}`, fixturePage({ writeKey, apiHost: relay.apiHost, trackPages: false, flushAt: 100, flushInterval: 600_000 }));
    return { orgId, readKey, url: `${relay.origin}/${name}` };
  };

  /** The visitor's events as the Profiles API returns them, once at least `count` are stored. */
  const storedEvents = (shop: Shop, anonymousId: string, count: number): Promise<StoredEvent[]> => {
    const api = async (route: string) => {
      const res = await fetch(`${e2e.apiHost}${route}`, { headers: { authorization: `Bearer ${shop.readKey}` } });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    return poll(`${count} stored event(s) of ${anonymousId}`, async () => {
      const found = await api(`/v1-profiles/search?anonymous_id=${encodeURIComponent(anonymousId)}`);
      const profile = (found.body.profiles as Array<{ id: string }> | undefined)?.[0];
      if (!profile) return { seen: found };
      const listed = await api(`/v1-profiles/${profile.id}/events?limit=50`);
      const events = (listed.body.events as StoredEvent[] | undefined) ?? [];
      return { value: events.length >= count ? events : undefined, seen: listed };
    });
  };

  const idsOf = (shop: Shop, events: readonly SentEvent[]): string[] => events.map((e) => eventIdFor(shop.orgId, e.messageId)).sort();

  it.each<{ loss: Loss; name: string }>([
    { loss: 'before the stack', name: 'exit-lost-before' },
    { loss: 'after the stack', name: 'exit-lost-after' },
  ])('events whose exit request is lost $loss are sent again by the next page, with the same messageIds, and stored once', async ({ loss, name }) => {
    const shop = await openShop(name);
    const page = await (await newContext()).newPage();
    await page.goto(shop.url);
    await page.evaluate("svc.track('add_to_cart', { sku: 'A-1' }); svc.track('checkout_started', { value: 49.9 })");
    const sent = await page.evaluate<SentEvent[]>('window.__sent');
    relay.lose(loss);
    await page.goto(`${relay.origin}/blank`);
    await relay.waitFor(() => relay.batches.length, 'the exit request');

    await page.goto(shop.url);
    const stored = await storedEvents(shop, sent[0]!.anonymousId, sent.length);
    await relay.waitFor(() => relay.batches[1]?.status, "the stack's answer to the next page");
    expect(stored.map((e) => e.id).sort()).toEqual(idsOf(shop, sent));
    expect(stored.map((e) => e.event_name).sort()).toEqual(['add_to_cart', 'checkout_started']);
    const messageIds = sent.map((e) => e.messageId);
    const names = ['add_to_cart', 'checkout_started'];
    expect(relay.batches).toEqual([
      { messageIds, names, status: 0, lost: loss },
      { messageIds, names, status: 200 },
    ]);
    expect(await page.evaluate('window.__errors')).toEqual([]);
  });

  it('where fetch has no keepalive, the exit goes by sendBeacon to the Segment-compatible route, and is stored once', async () => {
    const shop = await openShop('beacon-fallback');
    const context = await newContext();
    // A browser whose fetch cannot outlive the page (the library probes Request.prototype.keepalive).
    await context.addInitScript('delete Request.prototype.keepalive');
    const page = await context.newPage();
    await page.goto(shop.url);
    await page.evaluate("svc.track('add_to_cart', { sku: 'B-1' }); svc.track('checkout_started', { value: 12 })");
    const sent = await page.evaluate<SentEvent[]>('window.__sent');
    await page.goto(`${relay.origin}/blank`);
    await relay.waitFor(() => relay.batches[0]?.status, 'the beacon');

    const stored = await storedEvents(shop, sent[0]!.anonymousId, sent.length);
    expect(stored.map((e) => e.id).sort()).toEqual(idsOf(shop, sent));
    const messageIds = sent.map((e) => e.messageId);
    expect(relay.batches).toEqual([{ messageIds, names: ['add_to_cart', 'checkout_started'], status: 200, beacon: true }]);
    // No answer reached a page: the next one sends them again, and the stack stores nothing twice.
    await page.goto(shop.url);
    await relay.waitFor(() => relay.batches[1]?.status, 'the next page sending them again');
    expect(relay.batches[1]).toEqual({ messageIds, names: ['add_to_cart', 'checkout_started'], status: 200 });
    expect((await storedEvents(shop, sent[0]!.anonymousId, sent.length)).map((e) => e.id).sort()).toEqual(idsOf(shop, sent));
  });

  it('after a reload, a 6-day-old persisted event is delivered and an 8-day-old one expires', async () => {
    const shop = await openShop('ttl');
    const context = await newContext();
    // Pages of this context run window.__daysAgo days behind (0 at each load): what a page tracks under
    // a shifted clock is that old for the next page.
    await context.addInitScript(`(() => {
      const now = Date.now;
      window.__daysAgo = 0;
      Date.now = () => now() - window.__daysAgo * ${DAY};
    })()`);
    const page = await context.newPage();
    await page.goto(shop.url);
    await page.evaluate("window.__daysAgo = 8; svc.track('eight_days_old'); window.__daysAgo = 6; svc.track('six_days_old')");
    const [eight, six] = await page.evaluate<SentEvent[]>('window.__sent');
    relay.lose('before the stack');
    await page.reload();

    const stored = await storedEvents(shop, six!.anonymousId, 1);
    await relay.waitFor(() => relay.batches[1]?.status, "the stack's answer to the next page");
    expect(stored.map((e) => [e.id, e.event_name])).toEqual([[eventIdFor(shop.orgId, six!.messageId), 'six_days_old']]);
    expect(Math.abs(Date.now() - Date.parse(stored[0]!.event_timestamp) - 6 * DAY)).toBeLessThan(60_000);
    expect(relay.batches.map((b) => [b.messageIds, b.status])).toEqual([
      [[eight!.messageId, six!.messageId], 0],
      [[six!.messageId], 200],
    ]);
    expect(await page.evaluate('window.__errors')).toEqual([{ code: 'expired', message: 'svc: queued for more than 7 days', names: ['eight_days_old'] }]);
  });

  it('two tabs opening at once send the events a closed tab left in flight once between them; each is stored once', async () => {
    const shop = await openShop('tabs');
    const context = await newContext();
    const leaving = await context.newPage();
    await leaving.goto(shop.url);
    await leaving.evaluate("['a', 'b', 'c'].forEach((n) => svc.track('item_' + n))");
    const sent = await leaving.evaluate<SentEvent[]>('window.__sent');
    relay.lose('before the stack');
    await leaving.close();
    await relay.waitFor(() => relay.batches.length, 'the exit request');

    const [one, two] = await Promise.all([context.newPage(), context.newPage()]);
    await Promise.all([one.goto(shop.url), two.goto(shop.url)]);
    const stored = await storedEvents(shop, sent[0]!.anonymousId, sent.length);
    await Promise.all([one.evaluate('svc.flush()'), two.evaluate('svc.flush()')]);
    await new Promise((r) => setTimeout(r, 500)); // room for a second send, were there one
    expect(stored.map((e) => e.id).sort()).toEqual(idsOf(shop, sent));
    const [exit, ...after] = relay.batches;
    expect(exit).toMatchObject({ lost: 'before the stack', messageIds: sent.map((e) => e.messageId) });
    expect(after.flatMap((b) => b.messageIds).sort()).toEqual(sent.map((e) => e.messageId).sort());
    expect(after.map((b) => b.status)).toEqual(after.map(() => 200));
  });
});
