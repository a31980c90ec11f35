/** Consent, privacy signals, fingerprint gating and URL redaction in real Chromium. */
import { checkConsentDecision } from '@svc/contracts';
import { beforeEach, expect, it } from '@jest/globals';
import { describeInBrowser, fixture, sleep } from './test-support/browser';

describeInBrowser('privacy (browser)', (h) => {
  beforeEach(() => h.server.reset());

  it('enforced mode: deny clears the queue and stops capture, is honoured at the next load, and grant re-enables (over setEnabled(false))', async () => {
    h.server.serve('/enforced', fixture(h.server, { config: { consentMode: 'enforced', flushAt: 100, flushInterval: 600000 } }));
    const page = await h.open('/enforced');
    await page.evaluate("svc.track('queued', {}, __cb('queued')); svc.consent.deny('analytics'); svc.track('after-deny', {}, __cb('denied'))");
    expect(await page.evaluate('svc.consent.hasConsent("analytics")')).toBe(false);
    const [record] = await h.server.waitFor(() => h.server.consents.length && h.server.consents, 'the consent record');
    const anon = await page.evaluate<string>('svc.getAnonymousId()');
    expect(record?.body).toEqual({ anonymousId: anon, userId: null, purposes: { analytics: false }, source: 'sdk', timestamp: expect.any(String) });
    expect(checkConsentDecision(record?.body)).toMatchObject({ ok: true });
    expect(record?.headers.authorization).toBe('Bearer uk_live_browser_test');
    expect(await page.evaluate('[window.__callbacks.queued[0].error.code, window.__callbacks.denied[0].error.code]')).toEqual(['cleared', 'disabled']);
    await page.evaluate('svc.flush()');
    expect(h.server.batches).toHaveLength(0); // the first pageview went with the cleared queue

    await page.reload();
    expect(await page.evaluate('svc.isEnabled()')).toBe(false);
    await page.evaluate("svc.track('still-denied'); svc.flush()");
    await sleep(300);
    expect(h.server.batches).toHaveLength(0);

    await page.evaluate("svc.setEnabled(false); svc.consent.grant('analytics'); svc.track('after-grant')");
    expect(await page.evaluate('svc.isEnabled()')).toBe(true);
    await page.evaluate('svc.flush()');
    expect(h.server.events().map((e) => e.event)).toEqual(['after-grant']);
    expect(h.server.events()[0]?.context.consent).toEqual({ analytics: true });
  });

  it('advisory mode records a denial and keeps capturing', async () => {
    h.server.serve('/advisory', fixture(h.server, { config: { trackPages: false } }));
    const page = await h.open('/advisory');
    await page.evaluate("svc.consent.deny('analytics'); svc.track('kept'); svc.flush()");
    await h.server.waitFor(() => h.server.consents.length, 'the consent record');
    expect(h.server.events()).toEqual([expect.objectContaining({ event: 'kept', context: expect.objectContaining({ consent: { analytics: false } }) })]);
  });

  it('Do Not Track disables the client only with respectDNT', async () => {
    h.server.serve('/dnt-on', fixture(h.server, { config: { respectDNT: true } }));
    h.server.serve('/dnt-off', fixture(h.server, {}));
    const context = await h.context();
    await context.addInitScript("Object.defineProperty(Navigator.prototype, 'doNotTrack', { get: () => '1' })");
    const page = await context.newPage();
    await page.goto(`${h.server.origin}/dnt-on`);
    expect(await page.evaluate('svc.isEnabled()')).toBe(false);
    await page.evaluate("svc.track('x'); svc.flush()");
    await sleep(300);
    expect(h.server.batches).toHaveLength(0);
    await page.goto(`${h.server.origin}/dnt-off`);
    await page.evaluate('svc.flush()');
    expect(h.server.events().map((e) => e.type)).toEqual(['page']);
  });

  it('Global Privacy Control disables the client at init and a grant does not lift it', async () => {
    h.server.serve('/gpc', fixture(h.server, { config: { consentMode: 'enforced' } }));
    h.server.serve('/gpc-ignored', fixture(h.server, { config: { respectGPC: false, trackPages: false } }));
    const context = await h.context();
    await context.addInitScript("Object.defineProperty(Navigator.prototype, 'globalPrivacyControl', { get: () => true })");
    const page = await context.newPage();
    await page.goto(`${h.server.origin}/gpc`);
    await page.evaluate("svc.consent.grant('analytics'); svc.setEnabled(true); svc.track('x'); svc.flush()");
    expect(await page.evaluate('svc.isEnabled()')).toBe(false);
    await sleep(300);
    expect(h.server.batches).toHaveLength(0);
    await page.goto(`${h.server.origin}/gpc-ignored`);
    await page.evaluate("svc.track('y'); svc.flush()");
    expect(h.server.events()).toEqual([expect.objectContaining({ event: 'y', context: expect.objectContaining({ gpc: true }) })]);
  });

  it('attaches the fingerprint only with fingerprinting consent', async () => {
    h.server.serve('/fp', fixture(h.server, { config: { trackPages: false, enableFingerprinting: true } }));
    const page = await h.open('/fp');
    await page.evaluate("svc.track('without'); svc.consent.grant('fingerprinting'); svc.track('with'); svc.consent.deny('fingerprinting'); svc.track('revoked'); svc.flush()");
    const [without, withFp, revoked] = h.server.events();
    expect(without?.context).not.toHaveProperty('fingerprint');
    expect(withFp?.context.fingerprint).toEqual({ hash: expect.stringMatching(/^[0-9a-f]{14}$/), components: expect.objectContaining({ userAgent: expect.any(String) }) });
    expect(withFp?.context.consent).toEqual({ fingerprinting: true });
    expect(revoked?.context).not.toHaveProperty('fingerprint');
  });

  it('redacts sensitive values in url, search and referrer, query and fragment, keeping utm_* and click IDs', async () => {
    h.server.serve('/from', '<!doctype html><a id="go" href="/landing?token=abc&utm_source=mail&gclid=G1&email=x%40y.example&step=2#access_token=t0k&view=full">go</a>');
    h.server.serve('/landing', fixture(h.server, { config: { maskQueryParams: ['step'] } }));
    const context = await h.context();
    const page = await context.newPage();
    await page.goto(`${h.server.origin}/from?password=hunter2`);
    await Promise.all([page.waitForURL('**/landing**'), page.click('#go')]);
    await page.evaluate('svc.flush()');
    const [pageview] = h.server.events();
    const o = h.server.origin;
    const url = `${o}/landing?token=<redacted>&utm_source=mail&gclid=G1&email=<redacted>&step=<redacted>#access_token=<redacted>&view=full`;
    expect(pageview?.properties).toMatchObject({
      url,
      path: '/landing',
      search: '?token=<redacted>&utm_source=mail&gclid=G1&email=<redacted>&step=<redacted>',
      referrer: `${o}/from?password=<redacted>`,
    });
    expect(pageview?.context.page).toMatchObject({ url, hash: '#access_token=<redacted>&view=full', referrer: `${o}/from?password=<redacted>` });
    expect(pageview?.context.campaign).toMatchObject({ source: 'mail', gclid: 'G1' });
    expect(JSON.stringify(h.server.batches.map((b) => b.body))).not.toMatch(/hunter2|t0k|x%40y|abc&/);
  });
});
