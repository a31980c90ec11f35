/**
 * What the end-to-end suites of the browser library share: Debian's headless
 * Chromium, the real standalone stack (gateway, Postgres-backed log, identity
 * resolver, Profiles API and consent API on one server, on a database of its
 * own), the library's built script-tag file and a fixture page that records
 * what the library queued.
 *
 * Needs PostgreSQL (the jest global setup), /usr/bin/chromium (SVC_CHROMIUM
 * overrides it) and a built libs/sdk-browser/dist/svc.min.js. Missing
 * infrastructure skips loudly, or fails under REQUIRE_INFRA=1; a missing
 * bundle always fails.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { freePort, loadConfig } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { createTestDatabase, describeUnlessMissing, infraRequired, missingReason, testLogger, type TestDatabase } from '@svc/testkit';
import { standaloneConfigSpec } from '../config';
import { startStack, type RunningStack } from '../stack';
import { FixtureRelay } from './fixture-relay';

const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const BUNDLE = path.join(path.dirname(require.resolve('@svc/sdk-browser/package.json')), 'dist/svc.min.js');

/** Every wait of these suites is bounded by one of these. */
export const LANDING_TIMEOUT_MS = 20_000;
/** The GET routes of the Profiles API allow 60 requests a minute per (org, IP): polls stay well under it. */
const POLL_INTERVAL_MS = 600;

/** What the recording plugin saw of each event the library queued. */
export interface SentEvent {
  type: string;
  event: string | null;
  messageId: string;
  anonymousId: string;
  userId: string | null;
}

/** An event as the Profiles API returns it. */
export interface StoredEvent {
  id: string;
  event_name: string;
  event_timestamp: string;
  properties: Record<string, unknown>;
  context: Record<string, unknown>;
}

/**
 * The page: the script-tag build, a plugin recording every queued event into
 * window.__sent, then init(). onError records into window.__errors
 * ({code, message, names}); window.__cb(name) makes a callback recording into
 * window.__callbacks[name].
 */
export function fixturePage(config: Record<string, unknown>): string {
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

/** Polls `probe` until it returns a value, for at most `timeoutMs`; the error names the last observation. */
export async function poll<T>(what: string, probe: () => Promise<{ value?: T; seen: unknown }>, timeoutMs = LANDING_TIMEOUT_MS): Promise<T> {
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

/** Infrastructure these suites need that this run lacks, with how to provide it. */
function missingInfrastructure(): string[] {
  const missing: string[] = [];
  const postgres = missingReason('postgres');
  if (postgres) missing.push(postgres);
  if (!existsSync(CHROMIUM)) missing.push(`${CHROMIUM} is missing: apt-get install -y chromium (or point SVC_CHROMIUM at a Chromium)`);
  return missing;
}

/** `describe` for end-to-end suites: skips loudly without its infrastructure, or fails under REQUIRE_INFRA=1. */
export function describeEndToEnd(name: string, body: () => void): void {
  const missing = missingInfrastructure();
  describeUnlessMissing(name, missing.length === 0 ? undefined : missing.join('; '), body, infraRequired());
}

export interface EndToEnd {
  /** The script-tag build. */
  bundle: string;
  t: TestDatabase;
  stack: RunningStack;
  /** `{stack}/functions/v1`. */
  apiHost: string;
  browser: Browser;
  /** Stops everything, whatever fails on the way; throws the first failure. */
  stop(): Promise<void>;
}

/** Starts the stack on a database of its own (migrated, Postgres-backed log) and the browser. */
export async function startEndToEnd(name: string): Promise<EndToEnd> {
  if (!existsSync(BUNDLE)) {
    throw new Error(`${BUNDLE} is missing: build the browser library first (npx turbo run build --filter=@svc/sdk-browser)`);
  }
  const bundle = readFileSync(BUNDLE, 'utf8');
  const started: Array<() => Promise<unknown>> = [];
  const stop = async (): Promise<void> => {
    const failures: unknown[] = [];
    for (const step of started.reverse()) await step().catch((err: unknown) => failures.push(err));
    if (failures.length) throw failures[0];
  };
  try {
    const t = await createTestDatabase();
    started.push(() => t.drop());
    // Unused for PostgreSQL (DATABASE_URL is set), but nothing the stack keeps on disk may land in the repository's ./.data.
    const dataDir = await mkdtemp(path.join(os.tmpdir(), `svc-${name}-`));
    started.push(() => rm(dataDir, { recursive: true, force: true }));
    const config = loadConfig(standaloneConfigSpec, {
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      DATABASE_URL: t.url,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
    });
    const stack = await startStack(config, testLogger(name)); // migrates the test database, Postgres-backed log (no KAFKA_BROKERS)
    started.push(() => stack.lifecycle.shutdown('test done'));
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
    started.push(() => browser.close());
    return { bundle, t, stack, apiHost: `${stack.url}/functions/v1`, browser, stop };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}

export interface Shop {
  e2e: EndToEnd;
  /** The pages' origin; the write key allows only it. */
  fixture: FixtureRelay;
  orgId: string;
  writeKey: string;
  readKey: string;
  /** GET on the stack's API with the read key. */
  api(route: string): Promise<{ status: number; body: Record<string, unknown> }>;
  stop(): Promise<void>;
}

/** startEndToEnd, with a fixture origin for the pages and an organisation whose write key allows only that origin. */
export async function startShop(name: string): Promise<Shop> {
  const e2e = await startEndToEnd(name);
  let fixture: FixtureRelay | undefined;
  const stop = async () => {
    try {
      await fixture?.close();
    } finally {
      await e2e.stop();
    }
  };
  try {
    fixture = await new FixtureRelay(e2e.stack.url).start();
    const accounts = new AccountsStore(e2e.t.db);
    const orgId = (await accounts.createOrganization({ name })).id;
    const writeKey = (await accounts.createApiKey({ orgId, type: 'write', originAllowlist: [fixture.origin] })).key;
    const readKey = (await accounts.createApiKey({ orgId, type: 'read' })).key;
    const api = async (route: string) => {
      const res = await fetch(`${e2e.apiHost}${route}`, { headers: { authorization: `Bearer ${readKey}` } });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    return { e2e, fixture, orgId, writeKey, readKey, api, stop };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}
