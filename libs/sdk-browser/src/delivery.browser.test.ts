/** Delivery in real Chromium: retries, permanent drops, the queue cap, persistence, tabs and keepalive on pagehide. */
import { beforeEach, expect, it } from '@jest/globals';
import { describeInBrowser, fixture, recordedErrors, sleep } from './test-support/browser';
import { DROP } from './test-support/server';

const DAY = 24 * 3600 * 1000;

describeInBrowser('delivery (browser)', (h) => {
  beforeEach(() => h.server.reset());

  /**
   * A fresh context whose origin holds the queue `key` as a tab that is gone left
   * it: its heartbeat `tabAge` ms old, each event stored `age` ms ago and unanswered.
   */
  const contextWithQueueLeftBehind = async (key: string, tabAge: number, events: Array<{ name: string; messageId: string; age: number }>) => {
    const context = await h.context();
    const page = await context.newPage();
    await page.goto(`${h.server.origin}/blank`);
    await page.evaluate(`(() => {
      const ev = (name, messageId) => ({ type: 'track', event: name, messageId, anonymousId: 'anon_3b241101-e2bb-4255-8caf-4136c566a962', timestamp: new Date().toISOString(), context: {} });
      const i = ${JSON.stringify(events)}.map(({ name, messageId, age }) => ({ e: ev(name, messageId), t: Date.now() - age, a: 0 }));
      localStorage.setItem(${JSON.stringify(key)}, JSON.stringify({ h: Date.now() - ${tabAge}, i }));
    })()`);
    return { context, page };
  };

  it('retries a 5xx with backoff and the same messageIds, then reports success to the callback', async () => {
    h.server.serve('/retry', fixture(h.server, { config: { trackPages: false, flushAt: 1 } }));
    h.server.reply({ status: 503, body: { success: false, error: 'Service temporarily unavailable — usage check failed' }, headers: { 'Retry-After': '30' } });
    const page = await h.open('/retry');
    await page.evaluate("svc.track('retry-me', { n: 1 }, __cb('retry'))");
    const [first, second] = await h.server.waitFor(() => h.server.batches.length >= 2 && h.server.batches, 'the retry');
    expect([first?.status, second?.status]).toEqual([503, 200]);
    expect(second?.body).toEqual(first?.body);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(450); // 1 s base, equal jitter
    expect(second?.headers.authorization).toBe('Bearer uk_live_browser_test');
    const callbacks = await page.waitForFunction('window.__callbacks.retry').then((r) => r.jsonValue());
    expect(callbacks).toEqual([{ error: null, response: { success: true, processed: 1, failed: 0, duration_ms: 1 } }]);
  });

  it('drops a batch on 4xx, reporting it to onError and the callback, without retrying', async () => {
    h.server.serve('/bad', fixture(h.server, { config: { trackPages: false, flushAt: 1 } }));
    h.server.reply({ status: 400, body: { success: false, error: 'Invalid request: batch array is required' } });
    const page = await h.open('/bad');
    await page.evaluate("svc.track('rejected', {}, __cb('bad'))");
    await h.server.waitFor(() => h.server.batches.length === 1, 'the request');
    await sleep(1500);
    expect(h.server.batches).toHaveLength(1);
    const errors = await recordedErrors(page);
    expect(errors).toEqual([{ code: 'rejected', message: 'svc: rejected with 400: Invalid request: batch array is required', ids: [expect.any(String)], names: ['rejected'] }]);
    expect(await page.evaluate('window.__callbacks.bad[0].error')).toMatchObject({ code: 'rejected', status: 400 });
  });

  it('treats 429 as permanent and ignores Retry-After', async () => {
    h.server.serve('/limited', fixture(h.server, { config: { trackPages: false, flushAt: 1 } }));
    h.server.reply({ status: 429, body: { success: false, error: 'Rate limit exceeded: max 100 requests per minute per IP', code: 'rate_limited' }, headers: { 'Retry-After': '1' } });
    const page = await h.open('/limited');
    await page.evaluate("svc.track('limited')");
    await h.server.waitFor(() => h.server.batches.length === 1, 'the request');
    await sleep(2500);
    expect(h.server.batches).toHaveLength(1);
    expect(await recordedErrors(page)).toEqual([expect.objectContaining({ code: 'rejected', names: ['limited'] })]);
  });

  it('caps the queue at 100, evicting the oldest and reporting them; a request carries at most 100 events', async () => {
    h.server.serve('/cap', fixture(h.server, { config: { trackPages: false, flushAt: 100, flushInterval: 600000 } }));
    const page = await h.open('/cap');
    // the 100th event schedules a send; the five after it, in the same task, evict the five oldest
    await page.evaluate("for (let i = 0; i < 105; i++) svc.track('e' + i)");
    await page.evaluate('svc.flush()');
    const errors = await recordedErrors(page);
    expect(errors.every((e) => e.code === 'evicted')).toBe(true);
    expect(errors.flatMap((e) => e.names)).toEqual(['e0', 'e1', 'e2', 'e3', 'e4']);
    expect(h.server.batches.map((b) => (b.body.batch as unknown[]).length)).toEqual([100]);
    expect(h.server.events().map((e) => e.event)).toEqual(Array.from({ length: 100 }, (_, i) => `e${i + 5}`));
  });

  it('keeps undelivered events across a reload and sends them from the next page, same messageIds', async () => {
    h.server.serve('/persist', fixture(h.server, { config: { trackPages: false, flushAt: 1, maxRetries: 10 } }));
    h.server.fallback = { status: 503, body: { success: false, error: 'Internal server error' } };
    const page = await h.open('/persist');
    const anon = await page.evaluate<string>('svc.getAnonymousId()');
    await page.evaluate("svc.track('survivor')");
    const [failed] = await h.server.waitFor(() => h.server.batches.length >= 1 && h.server.batches, 'the first attempt');
    const id = (failed?.body.batch as Array<{ messageId: string }>)[0]?.messageId;
    await page.reload(); // pagehide: a keepalive attempt still meets the outage
    h.server.fallback = undefined;
    await h.server.waitFor(() => h.server.delivered((e) => e.messageId === id).length, 'delivery after the reload');
    expect(h.server.events((e) => e.event === 'survivor').every((e) => e.messageId === id && e.anonymousId === anon)).toBe(true);
    expect(await page.evaluate<string>('svc.getAnonymousId()')).toBe(anon);
  });

  it('events whose exit request the network dropped stay persisted, marked in flight, and the next page sends them once', async () => {
    h.server.serve('/exit', fixture(h.server, { config: { trackPages: false, flushAt: 100, flushInterval: 600000 } }));
    const page = await h.open('/exit');
    await page.evaluate("svc.track('first'); svc.track('second')");
    expect(h.server.batches).toHaveLength(0);
    h.server.reply(DROP);
    await page.goto(`${h.server.origin}/blank`);
    await h.server.waitFor(() => h.server.batches.length, 'the exit request');
    const stored = await page.evaluate<Array<{ e: { event: string }; f?: number }>>(
      "Object.keys(localStorage).filter((k) => k.startsWith('svc_queue_')).flatMap((k) => JSON.parse(localStorage.getItem(k)).i)",
    );
    expect(stored.map((x) => [x.e.event, x.f])).toEqual([
      ['first', 1],
      ['second', 1],
    ]);
    await page.goto(`${h.server.origin}/exit`);
    await h.server.waitFor(() => h.server.delivered().length, 'the re-send from the next page');
    await page.evaluate('svc.flush()');
    await sleep(300);
    const sent = h.server.batches.map((b) => [b.status, (b.body.batch as Array<{ event: string; messageId: string }>).map((e) => [e.event, e.messageId])]);
    const ids = sent[0]?.[1];
    expect(sent).toEqual([
      [0, ids],
      [200, ids],
    ]);
  });

  it('an event waiting out its last retry when the page is left, its exit request dropped, is delivered by the next page', async () => {
    h.server.serve('/patient', fixture(h.server, { config: { trackPages: false, flushAt: 1, maxRetries: 2 } }));
    const outage = { status: 503, body: { success: false, error: 'Internal server error' } };
    h.server.reply(outage, outage, DROP);
    const page = await h.open('/patient');
    await page.evaluate("svc.track('patient')");
    await h.server.waitFor(() => h.server.batches.length >= 2, 'two failed attempts');
    await page.goto(`${h.server.origin}/blank`); // during the last backoff (1 to 2 s)
    await h.server.waitFor(() => h.server.batches.length >= 3, 'the exit request');
    await page.goto(`${h.server.origin}/patient`);
    await h.server.waitFor(() => h.server.delivered().length, 'delivery by the next page');
    expect(h.server.batches.map((b) => b.status)).toEqual([503, 503, 0, 200]);
    expect(new Set(h.server.events().map((e) => e.messageId)).size).toBe(1);
    expect(await recordedErrors(page)).toEqual([]);
  });

  it('two tabs opening at once send the events a page left in flight exactly once', async () => {
    h.server.serve('/inflight', fixture(h.server, { config: { trackPages: false, flushAt: 100, flushInterval: 600000 } }));
    const context = await h.context();
    const leaving = await context.newPage();
    await leaving.goto(`${h.server.origin}/inflight`);
    await leaving.evaluate("['a', 'b', 'c'].forEach((n) => svc.track(n))");
    h.server.reply(DROP);
    await leaving.close({ runBeforeUnload: false });
    await h.server.waitFor(() => h.server.batches.length, 'the exit request');
    const [one, two] = await Promise.all([context.newPage(), context.newPage()]);
    await Promise.all([one.goto(`${h.server.origin}/inflight`), two.goto(`${h.server.origin}/inflight`)]);
    await h.server.waitFor(() => h.server.delivered().length >= 3, 'the events left in flight');
    await Promise.all([one.evaluate('svc.flush()'), two.evaluate('svc.flush()')]);
    await sleep(500);
    const [exit, ...after] = h.server.batches;
    expect(exit?.status).toBe(0);
    expect(after.flatMap((b) => (b.body.batch as Array<{ event: string }>).map((e) => e.event)).sort()).toEqual(['a', 'b', 'c']);
  });

  it('drops persisted events older than 7 days (reported as expired) and sends the rest', async () => {
    h.server.serve('/ttl', fixture(h.server, { config: { trackPages: false } }));
    const { page } = await contextWithQueueLeftBehind('svc_queue_gone', 8 * DAY, [
      { name: 'stale', messageId: 'seed-stale', age: 8 * DAY },
      { name: 'recent', messageId: 'seed-recent', age: 6 * DAY },
    ]);
    await page.goto(`${h.server.origin}/ttl`);
    await h.server.waitFor(() => h.server.delivered((e) => e.event === 'recent').length, 'the recent event');
    await page.evaluate('svc.flush()');
    expect(h.server.events().map((e) => e.event)).toEqual(['recent']);
    expect(await recordedErrors(page)).toEqual([expect.objectContaining({ code: 'expired', names: ['stale'] })]);
    expect(await page.evaluate("localStorage.getItem('svc_queue_gone')")).toBeNull();
  });

  it('two tabs opening at once send the events a closed tab left behind exactly once', async () => {
    h.server.serve('/tabs', fixture(h.server, { config: { trackPages: false } }));
    const { context } = await contextWithQueueLeftBehind(
      'svc_queue_closedtab',
      1000,
      ['a', 'b', 'c'].map((name) => ({ name, messageId: `orphan-${name}`, age: 1000 })),
    );
    const [one, two] = await Promise.all([context.newPage(), context.newPage()]);
    await Promise.all([one.goto(`${h.server.origin}/tabs`), two.goto(`${h.server.origin}/tabs`)]);
    await h.server.waitFor(() => h.server.delivered().length >= 3, 'the orphaned events');
    await Promise.all([one.evaluate('svc.flush()'), two.evaluate('svc.flush()')]);
    await sleep(500);
    expect(h.server.events().map((e) => e.messageId).sort()).toEqual(['orphan-a', 'orphan-b', 'orphan-c']);
  });

  it('on pagehide sends the queue by keepalive in chunks within 64 KiB; the next page sends everything whose answer it has not seen', async () => {
    h.server.serve('/leave', fixture(h.server, { config: { trackPages: false, flushAt: 100, flushInterval: 600000 } }));
    const context = await h.context();
    await context.addInitScript(`(() => {
      const types = (window.__listenerTypes = []);
      const add = EventTarget.prototype.addEventListener;
      EventTarget.prototype.addEventListener = function (type, ...rest) { types.push(type); return add.call(this, type, ...rest); };
      const f = window.fetch;
      window.fetch = function (url, init) {
        const log = JSON.parse(localStorage.getItem('__fetches') || '[]');
        log.push({ url: String(url), keepalive: !!(init && init.keepalive), bytes: init && init.body ? new Blob([init.body]).size : 0 });
        localStorage.setItem('__fetches', JSON.stringify(log));
        return f.apply(this, arguments);
      };
    })()`);
    const page = await context.newPage();
    await page.goto(`${h.server.origin}/leave`);
    await page.evaluate("for (let i = 0; i < 6; i++) svc.track('big' + i, { pad: 'x'.repeat(15000) })"); // ~90 KB queued
    const listeners = await page.evaluate<string[]>('window.__listenerTypes');
    expect(listeners).toEqual(expect.arrayContaining(['pagehide', 'visibilitychange']));
    expect(listeners).not.toContain('unload');
    expect(listeners).not.toContain('beforeunload');
    expect(h.server.batches).toHaveLength(0);
    await page.goto(`${h.server.origin}/blank`);
    await h.server.waitFor(() => h.server.batches.length, 'the keepalive requests');
    await sleep(300);
    const fetches = await page.evaluate<Array<{ keepalive: boolean; bytes: number }>>("JSON.parse(localStorage.getItem('__fetches'))");
    expect(fetches.length).toBeGreaterThan(0);
    expect(fetches.every((f) => f.keepalive)).toBe(true);
    expect(fetches.reduce((sum, f) => sum + f.bytes, 0)).toBeLessThanOrEqual(64 * 1024);
    const onLeave = h.server.events().map((e) => e.event);
    expect(onLeave.length).toBeGreaterThanOrEqual(3);
    expect(onLeave.length).toBeLessThan(6);
    // no page saw the answers to the keepalive requests: those events go again, with the rest
    await page.goto(`${h.server.origin}/leave`);
    await h.server.waitFor(() => h.server.delivered().length >= onLeave.length + 6, 'everything, from the next page');
    const fromNext = h.server.delivered().slice(onLeave.length);
    expect(fromNext.map((e) => e.event).sort()).toEqual(['big0', 'big1', 'big2', 'big3', 'big4', 'big5']);
    const sentOnLeave = new Map(h.server.events().slice(0, onLeave.length).map((e) => [e.event, e.messageId]));
    expect(fromNext.filter((e) => sentOnLeave.has(e.event)).map((e) => e.messageId)).toEqual(onLeave.map((name) => sentOnLeave.get(name)));
  });
});
