/**
 * End to end (issue 9): the browser library's real script-tag build, in
 * Debian's headless Chromium, against the real standalone stack in this
 * process (gateway, Postgres-backed log, identity resolver, Profiles API and
 * consent API on one server, on a database of its own). What the page sent is
 * read back through the Profiles API and the consent API with a read key.
 *
 * Needs PostgreSQL (the jest global setup), /usr/bin/chromium (SVC_CHROMIUM
 * overrides it) and a built libs/sdk-browser/dist/svc.min.js. Missing
 * infrastructure skips loudly, or fails under REQUIRE_INFRA=1; a missing
 * bundle always fails.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chromium, type Browser, type Page } from 'playwright-core';
import { eventIdFor } from '@svc/identity-resolver';
import { AccountsStore, freePort, loadConfig } from '@svc/runtime';
import { createTestDatabase, missingReason, testLogger, type TestDatabase } from '@svc/testkit';
import { standaloneConfigSpec } from './config';
import { startStack, type RunningStack } from './stack';

const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const BUNDLE = path.join(path.dirname(require.resolve('@svc/sdk-browser/package.json')), 'dist/svc.min.js');

/** Every wait of this file is bounded by one of these. */
const LANDING_TIMEOUT_MS = 20_000;
/** The GET routes of the Profiles API allow 60 requests a minute per (org, IP): polls stay well under it. */
const POLL_INTERVAL_MS = 600;

const CAMPAIGN = { utm_source: 'newsletter', utm_medium: 'email', utm_campaign: 'spring_sale', gclid: 'e2e-gclid-1' };

/** What the recording plugin saw of each event the library queued. */
interface SentEvent {
  type: string;
  event: string | null;
  messageId: string;
  anonymousId: string;
  userId: string | null;
}

interface Signal {
  signal_type: string;
  signal_value: string;
}

interface StoredEvent {
  id: string;
  event_name: string;
  event_timestamp: string;
  properties: Record<string, unknown>;
  context: Record<string, unknown>;
}

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

/** The page: the script-tag build, a plugin recording every queued event into window.__sent, then init(). */
function fixturePage(config: Record<string, unknown>): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>E2E shop</title></head>
<body>
<p>end-to-end fixture</p>
<script>
  window.__sent = [];
  window.__errors = [];
  window.__callbacks = {};
  window.__cb = function (name) {
    return function (error, response) {
      window.__callbacks[name] = { error: error ? { code: error.code, message: error.message } : null, response: response || null };
    };
  };
</script>
<script src="/svc.min.js"></script>
<script>
  svc.use({
    name: 'e2e-recorder',
    beforeTrack: function (e) {
      window.__sent.push({ type: e.type, event: e.event || null, messageId: e.messageId, anonymousId: e.anonymousId, userId: e.userId || null });
    },
  });
  svc.init(Object.assign(${JSON.stringify(config)}, {
    onError: function (e, dropped) {
      window.__errors.push({ code: e.code, message: e.message, names: dropped.map(function (d) { return d.event || d.type; }) });
    },
  }));
</script>
</body></html>`;
}

/** A static server for the fixture page and the bundle, on 127.0.0.1 (an origin other than the stack's). */
async function startFixtureServer(files: Record<string, { type: string; body: string }>): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const at = (req.url ?? '/').split('?')[0] ?? '/';
    if (at === '/favicon.ico') {
      res.writeHead(204);
      res.end();
      return;
    }
    const file = req.method === 'GET' ? files[at] : undefined;
    if (!file) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': file.type, 'Cache-Control': 'no-store' });
    res.end(file.body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** Polls `probe` until it returns a value, for at most `timeoutMs`; the error names the last observation. */
async function poll<T>(what: string, probe: () => Promise<{ value?: T; seen: unknown }>, timeoutMs = LANDING_TIMEOUT_MS): Promise<T> {
  const until = Date.now() + timeoutMs;
  let seen: unknown;
  for (;;) {
    const result = await probe();
    if (result.value !== undefined) return result.value;
    seen = result.seen;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen: ${JSON.stringify(seen)}`);
    await new Promise((r) => setTimeout(r, POLL_INTERVAL_MS));
  }
}

/** Infrastructure this file needs that this run lacks, with how to provide it. */
function missingInfrastructure(): string[] {
  const missing: string[] = [];
  const postgres = missingReason('postgres');
  if (postgres) missing.push(postgres);
  if (!existsSync(CHROMIUM)) missing.push(`${CHROMIUM} is missing: apt-get install -y chromium (or point SVC_CHROMIUM at a Chromium)`);
  return missing;
}

function describeEndToEnd(name: string, body: () => void): void {
  const missing = missingInfrastructure();
  if (missing.length === 0) {
    describe(name, body);
  } else if (process.env.REQUIRE_INFRA === '1') {
    describe(name, () => {
      it('needs its infrastructure', () => {
        throw new Error(`REQUIRE_INFRA=1 and: ${missing.join('; ')}`);
      });
    });
  } else {
    console.warn(`\n\n*** The end-to-end suite "${name}" is SKIPPED: ${missing.join('; ')}\n`);
    describe.skip(`${name} [skipped: ${missing.join('; ')}]`, body);
  }
}

describeEndToEnd('browser library → standalone stack → Profiles API (end to end, headless Chromium)', () => {
  let t: TestDatabase | undefined;
  let dataDir: string | undefined;
  let stack: RunningStack | undefined;
  let fixture: { server: Server; origin: string } | undefined;
  let browser: Browser | undefined;
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
    if (!existsSync(BUNDLE)) {
      throw new Error(`${BUNDLE} is missing: build the browser library first (npx turbo run build --filter=@svc/sdk-browser)`);
    }
    const bundle = readFileSync(BUNDLE, 'utf8');

    t = await createTestDatabase();
    // Unused for PostgreSQL (DATABASE_URL is set), but nothing the stack keeps on disk may land in the repository's ./.data.
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-sdk-e2e-'));
    const port = await freePort();
    const config = loadConfig(standaloneConfigSpec, {
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: t.url,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
    });
    const logger = testLogger('sdk-e2e');
    stack = await startStack(config, logger); // migrates the test database, Postgres-backed log (no KAFKA_BROKERS)
    apiHost = `${stack.url}/functions/v1`;

    // The fixture origin is known before the page is written: the write key allows only it.
    const files: Record<string, { type: string; body: string }> = { '/svc.min.js': { type: 'text/javascript', body: bundle } };
    fixture = await startFixtureServer(files);

    const accounts = new AccountsStore(t.db);
    const org = await accounts.createOrganization({ name: 'E2E Shop' });
    orgId = org.id;
    writeKey = (await accounts.createApiKey({ orgId, type: 'write', originAllowlist: [fixture.origin] })).key;
    readKey = (await accounts.createApiKey({ orgId, type: 'read' })).key;

    files['/shop'] = {
      type: 'text/html; charset=utf-8',
      // Nothing leaves before flush(): no size- or timer-triggered sends.
      body: fixturePage({ writeKey, apiHost, flushAt: 100, flushInterval: 600_000, maxRetries: 1 }),
    };
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 60_000);

  afterAll(async () => {
    // Every step runs, whatever failed before it; the first failure is reported.
    const failures: unknown[] = [];
    const step = async (fn: () => Promise<unknown>) => {
      await fn().catch((err: unknown) => failures.push(err));
    };
    await step(async () => browser?.close());
    await step(async () => {
      if (!fixture) return;
      fixture.server.closeAllConnections();
      await new Promise<void>((resolve) => fixture!.server.close(() => resolve()));
    });
    await step(async () => stack?.lifecycle.shutdown('test done'));
    await step(async () => t?.drop());
    await step(async () => dataDir && rm(dataDir, { recursive: true, force: true }));
    if (failures.length) throw failures[0];
  }, 60_000);

  it('a pageview, a purchase, an identify and a consent grant sent from the page are readable through the APIs', async () => {
    const context = await browser!.newContext();
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
