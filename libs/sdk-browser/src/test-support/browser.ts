/**
 * Shared set-up of the browser suites: Debian's headless Chromium driven by
 * playwright-core, the capture server, and fixture pages that load the
 * script-tag build. Without /usr/bin/chromium the suites skip loudly, unless
 * REQUIRE_INFRA=1, where they fail.
 */
import { afterAll, beforeAll, describe, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { buildScriptTag } from './script-tag';
import { CaptureServer } from './server';

/** Debian's Chromium; SVC_CHROMIUM overrides it (another build, or a missing path to try the skip). */
export const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface BrowserHarness {
  server: CaptureServer;
  browser: Browser;
  /** A fresh context (its own storage), closed after the test file. */
  context(): Promise<BrowserContext>;
  /** A new page in a fresh context, at `path` of the server. */
  open(path: string): Promise<Page>;
}

/** `describe` for browser suites: builds the script-tag bundle, starts server and browser, tears them down. */
export function describeInBrowser(name: string, body: (h: BrowserHarness) => void): void {
  if (!existsSync(CHROMIUM)) {
    if (process.env.REQUIRE_INFRA === '1') {
      describe(name, () => {
        it('needs Chromium', () => {
          throw new Error(`REQUIRE_INFRA=1 and ${CHROMIUM} is missing: apt-get install -y chromium`);
        });
      });
    } else {
      console.warn(`\n\n*** ${CHROMIUM} is missing: the browser suite "${name}" is SKIPPED. Install it with: apt-get install -y chromium\n`);
      describe.skip(name, () => body({} as BrowserHarness));
    }
    return;
  }
  describe(name, () => {
    const contexts: BrowserContext[] = [];
    const h = { server: new CaptureServer() } as BrowserHarness & { server: CaptureServer };
    beforeAll(async () => {
      h.server.serve('/svc.min.js', buildScriptTag().toString('utf8'), 'text/javascript');
      h.server.serve('/blank', '<!doctype html><title>blank</title><p>blank</p>');
      await h.server.start();
      h.browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
      h.context = async () => {
        const context = await h.browser.newContext();
        contexts.push(context);
        return context;
      };
      h.open = async (at) => {
        const page = await (await h.context()).newPage();
        await page.goto(h.server.origin + at);
        return page;
      };
    }, 60_000);
    afterAll(async () => {
      for (const c of contexts) await c.close().catch(() => undefined);
      await h.browser?.close();
      await h.server.close();
    });
    body(h);
  });
}

export interface FixtureOptions {
  /** init() options (JSON), on top of writeKey/apiHost and a recording onError. */
  config?: Record<string, unknown>;
  title?: string;
  body?: string;
  /** Script run before init(). */
  before?: string;
  /** Script run after init(). */
  after?: string;
  /** Leave out the init() call. */
  noInit?: boolean;
}

/**
 * A page loading the script-tag build. onError records into window.__errors
 * ({code, message, ids, names}); every callback passed through the helper
 * window.__cb(name) records into window.__callbacks[name].
 */
export function fixture(server: CaptureServer, options: FixtureOptions = {}): string {
  const config = { writeKey: 'uk_live_browser_test', apiHost: server.apiHost, ...options.config };
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${options.title ?? 'Fixture'}</title></head>
<body>
${options.body ?? ''}
<script>
  window.__errors = [];
  window.__callbacks = {};
  window.__cb = function (name) {
    return function (error, response) {
      (window.__callbacks[name] = window.__callbacks[name] || []).push({ error: error ? { code: error.code, message: error.message, status: error.status } : null, response: response || null });
    };
  };
</script>
<script src="/svc.min.js"></script>
<script>
  ${options.before ?? ''}
  ${options.noInit ? '' : `svc.init(Object.assign(${JSON.stringify(config)}, { onError: function (e, dropped) {
    window.__errors.push({ code: e.code, message: e.message, ids: dropped.map(function (d) { return d.messageId; }), names: dropped.map(function (d) { return d.event || d.type; }) });
  } }));`}
  ${options.after ?? ''}
</script>
</body></html>`;
}

export interface RecordedError {
  code: string;
  message: string;
  ids: string[];
  names: string[];
}

export const recordedErrors = (page: Page): Promise<RecordedError[]> => page.evaluate<RecordedError[]>('window.__errors');

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
