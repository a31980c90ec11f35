/**
 * End to end (issue 9): the browser library's real script-tag build, in
 * Debian's headless Chromium, against the real standalone stack in this
 * process (see test-support/browser-e2e). What the page sent is read back
 * through the Profiles API and the consent API with a read key.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Page } from 'playwright-core';
import { eventIdFor } from '@svc/identity';
import { AccountsStore } from '@svc/accounts';
import { describeEndToEnd, fixturePage, poll, startEndToEnd, type EndToEnd, type SentEvent, type StoredEvent } from './test-support/browser-e2e';
import { FixtureRelay } from './test-support/fixture-relay';

const CAMPAIGN = { utm_source: 'newsletter', utm_medium: 'email', utm_campaign: 'spring_sale', gclid: 'e2e-gclid-1' };

interface Signal {
  signal_type: string;
  signal_value: string;
}

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

describeEndToEnd('browser library → standalone stack → Profiles API (end to end, headless Chromium)', () => {
  let e2e: EndToEnd | undefined;
  let fixture: FixtureRelay | undefined;
  let orgId: string;
  let readKey: string;
  let writeKey: string;
  let apiHost: string;
  /** Console errors and page errors of the fixture page, shown when something does not land. */
  const pageProblems: string[] = [];

  const api = async (route: string): Promise<Reply> => {
    const res = await fetch(`${apiHost}${route}`, { headers: { authorization: `Bearer ${readKey}` } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    e2e = await startEndToEnd('sdk-e2e');
    apiHost = e2e.apiHost;

    // The fixture origin is known before the page is written: the write key allows only it.
    // The page posts to the stack directly (another origin), not through the fixture server's relay.
    fixture = await new FixtureRelay(e2e.stack.url).start();
    fixture.serve('/svc.min.js', e2e.bundle, 'text/javascript');

    const accounts = new AccountsStore(e2e.t.db);
    const org = await accounts.createOrganization({ name: 'E2E Shop' });
    orgId = org.id;
    writeKey = (await accounts.createApiKey({ orgId, type: 'write', originAllowlist: [fixture.origin] })).key;
    readKey = (await accounts.createApiKey({ orgId, type: 'read' })).key;

    // Nothing leaves before flush(): no size- or timer-triggered sends.
    fixture.serve('/shop', fixturePage({ writeKey, apiHost, flushAt: 100, flushInterval: 600_000, maxRetries: 1 }));
  }, 60_000);

  afterAll(async () => {
    try {
      await fixture?.close();
    } finally {
      await e2e?.stop();
    }
  }, 60_000);

  it('a pageview, a purchase, an identify and a consent grant sent from the page are readable through the APIs', async () => {
    const context = await e2e!.browser.newContext();
    const page: Page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') pageProblems.push(`console.${m.type()}: ${m.text()} (${m.location().url})`);
    });
    page.on('pageerror', (err) => pageProblems.push(`pageerror: ${err.message}`));

    const landing = `${fixture!.origin}/shop?${new URLSearchParams(CAMPAIGN).toString()}`;
    await page.goto(landing);
    await page.evaluate('svc.ready()');
    const anonymousId = await page.evaluate<string>('svc.getAnonymousId()');
    expect(anonymousId).toMatch(/^anon_[0-9a-f-]{36}$/);

    await page.evaluate("svc.track('purchase', { value: 10, currency: 'USD', order_id: 'o-1' }, __cb('purchase'))");
    await page.evaluate("svc.identify('user-1', { email: 'Ada@Example.com' }, __cb('identify'))");
    await page.evaluate('svc.flush()');

    const sent = await page.evaluate<SentEvent[]>('window.__sent');
    const callbacks = await page.evaluate<Record<string, unknown>>('window.__callbacks');
    const problems = { errors: await page.evaluate<unknown[]>('window.__errors'), page: pageProblems };
    // The gateway took all three in one request: the callbacks carry its answer.
    expect({ callbacks, ...problems }).toEqual({
      callbacks: {
        purchase: { error: null, response: expect.objectContaining({ success: true, processed: 3, failed: 0 }) },
        identify: { error: null, response: expect.objectContaining({ success: true, processed: 3, failed: 0 }) },
      },
      errors: [],
      page: [],
    });
    expect(sent.map((e) => [e.type, e.event])).toEqual([
      ['page', null],
      ['track', 'purchase'],
      ['identify', null],
    ]);
    expect(new Set(sent.map((e) => e.anonymousId))).toEqual(new Set([anonymousId]));
    expect(new Set(sent.map((e) => e.messageId)).size).toBe(3);

    // Consent goes to /v1-consent at once (best effort, keepalive), now with the user id.
    await page.evaluate("svc.consent.grant('analytics')");

    // The resolver has stored the identify: the profile of user-1 exists.
    const profile = await poll('the profile of user-1 in the Profiles API', async () => {
      const found = await api('/v1-profiles/search?user_id=user-1');
      const profiles = found.body.profiles as Array<Record<string, unknown>> | undefined;
      return { value: found.status === 200 && profiles?.length ? profiles : undefined, seen: { ...found, page: pageProblems } };
    });
    expect(profile).toHaveLength(1);
    expect(profile[0]).toMatchObject({
      identified: true,
      first_touch: { source: CAMPAIGN.utm_source, medium: CAMPAIGN.utm_medium, campaign: CAMPAIGN.utm_campaign, at: expect.any(String) },
    });
    const profileId = profile[0]!.id as string;

    const detail = await api(`/v1-profiles/${profileId}`);
    expect(detail.status).toBe(200);
    expect(detail.body.profile).toMatchObject({
      id: profileId,
      canonical_id: expect.stringMatching(/^prf_/),
      identified: true,
      user_id: 'user-1',
      first_touch: { source: CAMPAIGN.utm_source, medium: CAMPAIGN.utm_medium, campaign: CAMPAIGN.utm_campaign },
    });

    // Every event the page sent is on the profile, under the id the resolver derives from its messageId.
    const expected = sent.map((e) => ({ id: eventIdFor(orgId, e.messageId), event_name: e.type === 'track' ? e.event : `$${e.type === 'page' ? 'pageview' : e.type}` }));
    const events = await poll('the three events on the profile', async () => {
      const reply = await api(`/v1-profiles/${profileId}/events?limit=50`);
      const list = (reply.body.events as StoredEvent[] | undefined) ?? [];
      return { value: list.length >= expected.length ? list : undefined, seen: reply };
    }, 10_000);
    expect(events.map((e) => ({ id: e.id, event_name: e.event_name })).sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [...expected].sort((a, b) => a.id.localeCompare(b.id)),
    );
    expect(events.map((e) => e.event_name).sort()).toEqual(['$identify', '$pageview', 'purchase']);
    // The first touch is the landing pageview's.
    expect((profile[0]!.first_touch as { at: string }).at).toBe(events.find((e) => e.event_name === '$pageview')!.event_timestamp);
    const purchase = events.find((e) => e.event_name === 'purchase')!;
    expect(purchase.properties).toEqual({ value: 10, currency: 'USD', order_id: 'o-1' });
    expect(purchase.context).toMatchObject({
      campaign: { source: CAMPAIGN.utm_source, medium: CAMPAIGN.utm_medium, name: CAMPAIGN.utm_campaign, gclid: CAMPAIGN.gclid },
      library: { name: expect.any(String), version: expect.stringMatching(/^1\.5\./) },
      ip_address: '127.0.0.1',
    });

    const identities = await api(`/v1-profiles/${profileId}/identities`);
    expect(identities.status).toBe(200);
    const { signals, click_ids } = identities.body.identities as { signals: Signal[]; click_ids: Array<Record<string, unknown>> };
    const pairs = signals.map((s) => [s.signal_type, s.signal_value]);
    expect(pairs).toEqual(expect.arrayContaining([['user_id', 'user-1'], ['anonymous_id', anonymousId], ['email', 'ada@example.com']]));
    expect(pairs).not.toContainEqual(['email', 'Ada@Example.com']);
    expect(click_ids).toEqual([expect.objectContaining({ click_type: 'gclid', click_id: CAMPAIGN.gclid, campaign_source: CAMPAIGN.utm_source })]);

    // The consent decision landed for this browser's anonymous id.
    const consent = await poll('the analytics grant in GET /v1-consent', async () => {
      const got = await api(`/v1-consent?anonymous_id=${encodeURIComponent(anonymousId)}`);
      const current = got.body.current as Record<string, { granted?: boolean }> | undefined;
      return { value: got.status === 200 && current?.analytics ? got.body : undefined, seen: { ...got, page: pageProblems } };
    });
    expect(consent).toMatchObject({
      anonymous_id: anonymousId,
      current: { analytics: expect.objectContaining({ granted: true, source: 'sdk' }) },
      history: [expect.objectContaining({ anonymous_id: anonymousId, user_id: 'user-1', purposes: { analytics: true }, source: 'sdk' })],
    });
    expect(pageProblems).toEqual([]);
    await context.close();
  });

  it("the write key's origin allowlist was in force: another origin is refused", async () => {
    const res = await fetch(`${apiHost}/v1-batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${writeKey}`, origin: 'http://127.0.0.1:1' },
      body: JSON.stringify({ batch: [] }),
    });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 403, body: expect.objectContaining({ success: false, code: 'origin_not_allowed' }) });
  });
});
