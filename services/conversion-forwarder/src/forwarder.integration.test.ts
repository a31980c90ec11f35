import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { busMigrations, createPostgresLogBus, prefixedTopics, type PostgresLogBus } from '@svc/bus';
import type { InboundEvent, RawEventEnvelope } from '@svc/contracts';
import { ConnectorStore, conversionsMigrations, qualifyingConversionNames } from '@svc/conversions';
import { IdentifierHashes, MasterKeyRing, identityMigrations, privacyMigrations } from '@svc/identity';
import { startResolver, type RunningResolver } from '@svc/identity-resolver';
import { createMetrics } from '@svc/runtime';
import { AccountsStore, accountsMigrations } from '@svc/accounts';
import { createTestDatabase, describeWithPostgres, testLogger, type TestDatabase } from '@svc/testkit';
import { forwarderMetrics, type ForwarderMetrics } from './metrics';
import { startCaptureServer, type CaptureServer, type ScriptedResponse } from './platforms/test-support/capture-server';
import { startForwarder, type RunningForwarder } from './start';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const EMAIL = 'Ada.Lovelace@Example.com';

/**
 * The whole path on real parts: raw events on the Postgres-backed log, the
 * real identity resolver (click IDs, candidates), the forwarder, and local
 * HTTP servers standing in for Google Ads (API and OAuth) and Meta.
 */
describeWithPostgres('conversion forwarder', () => {
  let t: TestDatabase;
  let bus: PostgresLogBus;
  let resolver: RunningResolver;
  let forwarder: RunningForwarder;
  let metrics: ForwarderMetrics;
  const topics = prefixedTopics(`cf${randomBytes(3).toString('hex')}.`);
  const logger = testLogger('forwarder-test');
  const secretKey = randomBytes(32);
  const servers: CaptureServer[] = [];

  const start = () =>
    startForwarder({
      db: t.db,
      bus,
      candidatesTopic: topics.conversionsCandidates,
      secretKey,
      logger,
      metrics,
      retry: { maxAttempts: 3, baseMs: 100, capMs: 200 },
      pollIntervalMs: 50,
    });

  beforeAll(async () => {
    t = await createTestDatabase([accountsMigrations, busMigrations, identityMigrations, privacyMigrations, conversionsMigrations]);
    bus = createPostgresLogBus({ db: t.db, url: t.url, pollFallbackMs: 100, heartbeatMs: 200, sessionTimeoutMs: 2_000 });
    await bus.ensureTopics(Object.values(topics));
    resolver = await startResolver({
      db: t.db,
      bus,
      topics,
      logger,
      masterKeys: new MasterKeyRing(randomBytes(32)),
      hashes: new IdentifierHashes([randomBytes(32)]),
      relay: { intervalMs: 50 },
      batch: { conversionNames: (orgId) => qualifyingConversionNames(t.db, orgId) },
    });
    metrics = forwarderMetrics(createMetrics({ collectDefaultMetrics: false }));
    forwarder = await start();
  });
  afterAll(async () => {
    await forwarder?.stop();
    await resolver?.stop();
    await bus?.close();
    for (const s of servers) await s.close();
    await t?.drop();
  });

  interface Org {
    orgId: string;
    google: CaptureServer;
    googleToken: CaptureServer;
    meta: CaptureServer;
  }

  /** An organisation with a Google Ads and (optionally) a Meta connector, each pointed at its own capture server. */
  async function org(options: { meta?: boolean; googleEvents?: string } = {}): Promise<Org> {
    const capture = async (fallback?: ScriptedResponse) => {
      const s = await startCaptureServer(fallback ? { fallback } : {});
      servers.push(s);
      return s;
    };
    const google = await capture({ status: 200, body: { results: [{ gclid: 'x' }] } });
    const googleToken = await capture({ status: 200, body: { access_token: 'ya29.test-access', expires_in: 3600, token_type: 'Bearer' } });
    const meta = await capture({ status: 200, body: { events_received: 1, fbtrace_id: 'trace' } });
    const orgId = (await new AccountsStore(t.db).createOrganization({ name: 'Shop' })).id;
    const store = new ConnectorStore(t.db, secretKey);
    await store.add({
      orgId,
      platform: 'google_ads',
      config: {
        customer_id: '123-456-7890',
        conversion_action_id: '555',
        client_id: 'client-id',
        client_secret: 'client-secret-value',
        developer_token: 'developer-token-value',
        refresh_token: 'refresh-token-value',
        api_base_url: google.url,
        token_url: `${googleToken.url}/token`,
      },
      ...(options.googleEvents ? { events: options.googleEvents } : {}),
    });
    if (options.meta) {
      await store.add({ orgId, platform: 'meta', config: { pixel_id: '1234567890', access_token: 'meta-access-token-value', api_base_url: meta.url } });
    }
    return { orgId, google, googleToken, meta };
  }

  const envelope = (orgId: string, anonymousId: string, event: Partial<InboundEvent> & Pick<InboundEvent, 'type'>, at = new Date()): RawEventEnvelope => ({
    v: 1,
    orgId,
    receivedAt: new Date().toISOString(),
    requestId: 'req-test',
    clientIp: '203.0.113.7',
    event: {
      messageId: randomUUID(),
      anonymousId,
      timestamp: at.toISOString(),
      ...event,
      context: { ip_address: '203.0.113.7', user_agent: 'Mozilla/5.0 test', ...event.context },
    } as InboundEvent,
  });

  async function ingest(envelopes: RawEventEnvelope[]): Promise<string[]> {
    const results = await bus.produce(topics.eventsRaw, envelopes.map((e) => ({ key: `${e.orgId}:${e.event.anonymousId}`, value: e })));
    expect(results.every((r) => r.ok)).toBe(true);
    return envelopes.map((e) => e.event.messageId);
  }

  /** A landing page view carrying click IDs, then whatever follows, for one visitor. */
  const visitor = (orgId: string, campaign: Record<string, string> = { source: 'google', medium: 'cpc', gclid: 'GCLID-1' }) => {
    const anonymousId = `anon-${randomBytes(4).toString('hex')}`;
    return {
      anonymousId,
      landing: envelope(orgId, anonymousId, { type: 'page', properties: { name: 'Landing' }, context: { campaign } }),
      event: (e: Partial<InboundEvent> & Pick<InboundEvent, 'type'>, at?: Date) => envelope(orgId, anonymousId, e, at),
    };
  };

  async function waitFor(what: string, cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
    const until = Date.now() + ms;
    while (!(await cond())) {
      if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  const settle = () => new Promise((r) => setTimeout(r, 600));
  const queueRows = async (orgId: string) =>
    (await t.db('conversions.queue').where({ org_id: orgId }).orderBy('id')) as Array<{ status: string; attempts: number; last_error: string | null; last_status: number | null; platform: string; order_id: string | null }>;
  const counter = async (platform: string, outcome: string) =>
    (await metrics.conversions.get()).values.find((v) => v.labels.platform === platform && v.labels.outcome === outcome)?.value ?? 0;

  /**
   * A fresh organisation whose Google Ads first answers `responses`, and one visitor who
   * lands from a click and then sends `conversion`; resolves once its queue row is `status`.
   */
  async function convertUntil(
    responses: ScriptedResponse[],
    conversion: Partial<InboundEvent> & Pick<InboundEvent, 'type'>,
    status: string,
  ): Promise<Org> {
    const o = await org();
    o.google.respondWith(responses);
    const v = visitor(o.orgId);
    await ingest([v.landing, v.event(conversion)]);
    await waitFor(`the conversion ${status}`, async () => (await queueRows(o.orgId))[0]?.status === status);
    await settle();
    return o;
  }

  it('sends a qualifying conversion with a click ID exactly once to each platform, well formed and hashed', async () => {
    const o = await org({ meta: true });
    const v = visitor(o.orgId, { source: 'google', medium: 'cpc', gclid: 'GCLID-1', fbclid: 'FBCLID-1' });
    const [, , purchaseId] = await ingest([
      v.landing,
      v.event({ type: 'identify', userId: 'user-1', traits: { email: EMAIL, phone: '+1 650 555 1234' } }),
      v.event({ type: 'track', event: 'purchase', properties: { value: 25.5, currency: 'usd', order_id: 'order-1' }, context: { page: { url: 'https://shop.test/thanks' } } }),
    ]);
    await waitFor('both platforms called', () => o.google.requests.length === 1 && o.meta.requests.length === 1);
    await settle();
    expect(o.google.requests).toHaveLength(1);
    expect(o.meta.requests).toHaveLength(1);

    const g = o.google.requests[0]!;
    expect(g.method).toBe('POST');
    expect(g.path).toBe('/v26/customers/1234567890:uploadClickConversions');
    expect(g.headers).toMatchObject({ authorization: 'Bearer ya29.test-access', 'developer-token': 'developer-token-value' });
    expect(g.body).toEqual({
      conversions: [
        {
          gclid: 'GCLID-1',
          conversionAction: 'customers/1234567890/conversionActions/555',
          conversionDateTime: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+00:00$/),
          conversionValue: 25.5,
          currencyCode: 'USD',
          orderId: 'order-1',
          userIdentifiers: [{ hashedEmail: sha('ada.lovelace@example.com') }, { hashedPhoneNumber: sha('+16505551234') }],
        },
      ],
      partialFailure: true,
    });
    expect(o.googleToken.requests).toHaveLength(1);
    expect(o.googleToken.requests[0]!.body).toMatchObject({ grant_type: 'refresh_token', refresh_token: 'refresh-token-value' });

    const m = o.meta.requests[0]!;
    expect(m.path).toBe('/v26.0/1234567890/events');
    const data = (m.body as { data: Array<Record<string, unknown>> }).data[0]!;
    expect(data).toMatchObject({
      event_name: 'Purchase',
      event_id: purchaseId,
      action_source: 'website',
      event_source_url: 'https://shop.test/thanks',
      user_data: {
        em: [sha('ada.lovelace@example.com')],
        ph: [sha('16505551234')],
        fbc: expect.stringMatching(/^fb\.1\.\d{13}\.FBCLID-1$/),
        client_ip_address: '203.0.113.7',
        client_user_agent: 'Mozilla/5.0 test',
      },
      custom_data: { value: 25.5, currency: 'USD', order_id: 'order-1' },
    });
    // No clear-text contact details in anything that left, and the token only where Meta reads it.
    for (const r of [g, m]) expect(r.rawBody.toLowerCase()).not.toMatch(/lovelace|650 555|6505551234"/);
    expect(m.path).not.toContain('meta-access-token-value');

    const rows = await queueRows(o.orgId);
    expect(rows.map((r) => [r.platform, r.status, r.attempts])).toEqual([
      ['google_ads', 'sent', 1],
      ['meta', 'sent', 1],
    ]);
  });

  it('sends nothing for a name that does not qualify, or for a profile without a usable click ID', async () => {
    const o = await org();
    const noClickBefore = await counter('google_ads', 'no_click');
    const clicked = visitor(o.orgId);
    const unclicked = visitor(o.orgId, { source: 'newsletter', medium: 'email' });
    const fbOnly = visitor(o.orgId, { fbclid: 'FB-ONLY' });
    await ingest([
      clicked.landing,
      clicked.event({ type: 'track', event: 'Purchase Completed', properties: { order_id: 'pc-1' } }),
      clicked.event({ type: 'track', event: 'Purchase', properties: { order_id: 'pc-2' } }),
      unclicked.landing,
      unclicked.event({ type: 'track', event: 'purchase', properties: { order_id: 'u-1' } }),
      fbOnly.landing,
      fbOnly.event({ type: 'track', event: 'purchase', properties: { order_id: 'f-1' } }),
      // Same visitor and partition as the names above, so once this one is sent they were all seen.
      clicked.event({ type: 'track', event: 'sign_up' }),
    ]);
    await waitFor('the sign_up sent', () => o.google.requests.length >= 1);
    await waitFor('both click-less purchases considered', async () => (await counter('google_ads', 'no_click')) - noClickBefore >= 2);
    await settle();
    expect(o.google.requests).toHaveLength(1);
    expect((o.google.requests[0]!.body as { conversions: Array<{ orderId?: string }> }).conversions[0]!.orderId).toBeUndefined();
    expect((await queueRows(o.orgId)).map((r) => r.status)).toEqual(['sent']);
  });

  it("uses a connector's custom names instead of the defaults", async () => {
    const o = await org({ googleEvents: 'Order Completed' });
    const v = visitor(o.orgId);
    await ingest([
      v.landing,
      v.event({ type: 'track', event: 'purchase', properties: { order_id: 'c-1' } }),
      v.event({ type: 'track', event: 'Order Completed', properties: { order_id: 'c-2' } }),
    ]);
    await waitFor('the custom conversion sent', () => o.google.requests.length >= 1);
    await settle();
    expect(o.google.requests.map((r) => (r.body as { conversions: Array<{ orderId: string }> }).conversions[0]!.orderId)).toEqual(['c-2']);
  });

  it('sends the same order id once, however many events carry it', async () => {
    const o = await org();
    const duplicatesBefore = await counter('google_ads', 'duplicate');
    const v = visitor(o.orgId);
    const w = visitor(o.orgId, { gclid: 'GCLID-OTHER-VISITOR' });
    await ingest([
      v.landing,
      v.event({ type: 'track', event: 'purchase', properties: { value: 10, order_id: 'same-order' } }),
      v.event({ type: 'track', event: '$purchase', properties: { value: 10, order_id: 'same-order' } }),
      w.landing,
      w.event({ type: 'track', event: 'purchase', properties: { value: 10, order_id: 'same-order' } }),
    ]);
    await waitFor('the repeats skipped', async () => (await counter('google_ads', 'duplicate')) - duplicatesBefore >= 2);
    await waitFor('the order sent', () => o.google.requests.length >= 1);
    await settle();
    expect(o.google.requests).toHaveLength(1);
    expect((await queueRows(o.orgId)).map((r) => [r.order_id, r.status])).toEqual([['same-order', 'sent']]);
  });

  it('retries a 500 and sends once; marks a conversion dead when retries run out', async () => {
    const o = await convertUntil(
      [{ status: 500, body: { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } } }],
      { type: 'track', event: 'purchase', properties: { order_id: 'retry-1' } },
      'sent',
    );
    expect(o.google.requests.map((r) => (r.body as { conversions: Array<{ orderId: string }> }).conversions[0]!.orderId)).toEqual(['retry-1', 'retry-1']);
    expect((await queueRows(o.orgId))[0]).toMatchObject({ status: 'sent', attempts: 2, last_error: null });

    const p = await convertUntil([{ status: 503 }, { status: 502 }, { status: 500 }], { type: 'track', event: 'lead' }, 'dead');
    expect(p.google.requests).toHaveLength(3);
    expect((await queueRows(p.orgId))[0]).toMatchObject({ status: 'dead', attempts: 3, last_status: 500 });
  });

  it("fails a 400 for good with the platform's reason, and no retry", async () => {
    const o = await convertUntil(
      [{ status: 400, body: { error: { code: 400, message: 'Request contains an invalid argument.', status: 'INVALID_ARGUMENT' } } }],
      { type: 'track', event: 'purchase', properties: { order_id: 'bad-1' } },
      'failed',
    );
    await settle(); // a retry, were there one, would have been sent by now
    expect(o.google.requests).toHaveLength(1);
    const [row] = await queueRows(o.orgId);
    expect(row).toMatchObject({ status: 'failed', attempts: 1, last_status: 400 });
    expect(row!.last_error).toContain('Request contains an invalid argument.');
    expect(row!.last_error).not.toMatch(/developer-token-value|client-secret-value|refresh-token-value|ya29/);
  });

  it('marks a click exhausted when its window has passed or the platform refuses it as expired', async () => {
    const o = await org();
    const old = visitor(o.orgId, { source: 'google', medium: 'cpc', gclid: 'OLD-GCLID' });
    const oldLanding = old.event({ type: 'page', properties: { name: 'Landing' }, context: { campaign: { gclid: 'OLD-GCLID' } } }, new Date(Date.now() - 95 * 86_400_000));
    await ingest([oldLanding, old.event({ type: 'track', event: 'purchase' })]);
    // The forwarder's own record of exhausted clicks (conversions.exhausted_click_ids).
    const exhausted = async (clickId: string) => {
      const row = (await t.db('conversions.exhausted_click_ids').where({ org_id: o.orgId, click_id: clickId }).first()) as { exhausted_at: Date } | undefined;
      return row && { is_exhausted: true, exhausted_at: row.exhausted_at };
    };
    await waitFor('the old click exhausted', async () => (await exhausted('OLD-GCLID'))?.is_exhausted === true);
    expect((await exhausted('OLD-GCLID'))?.exhausted_at).toBeInstanceOf(Date);

    o.google.respondWith([
      {
        status: 200,
        body: {
          results: [{}],
          partialFailureError: {
            code: 3,
            message: 'The click is too old.',
            details: [{ '@type': 'type.googleapis.com/google.ads.googleads.v26.errors.GoogleAdsFailure', errors: [{ errorCode: { conversionUploadError: 'EXPIRED_EVENT' }, message: 'The imported event has a click that is too old for it to be imported.' }] }],
          },
        },
      },
    ]);
    const refused = visitor(o.orgId, { gclid: 'REFUSED-GCLID' });
    await ingest([refused.landing, refused.event({ type: 'track', event: 'purchase', properties: { order_id: 'exp-1' } })]);
    await waitFor('the refused click exhausted', async () => (await exhausted('REFUSED-GCLID'))?.is_exhausted === true);
    expect(o.google.requests).toHaveLength(1);
    expect((await queueRows(o.orgId)).map((r) => r.status)).toEqual(['failed']);
  });

  it('sends nothing through a disabled connector, and resumes once it is enabled again', async () => {
    const o = await org();
    const store = new ConnectorStore(t.db, secretKey);
    const [connector] = await store.list(o.orgId);
    const v = visitor(o.orgId);
    await ingest([v.landing]);
    await store.setState(connector!.id, 'disabled');
    // Qualifying names come from active connectors: with none, no candidate is even emitted.
    await ingest([v.event({ type: 'track', event: 'purchase', properties: { order_id: 'while-disabled' } })]);
    await settle();
    expect(await queueRows(o.orgId)).toEqual([]);
    await store.setState(connector!.id, 'active');
    await ingest([v.event({ type: 'track', event: 'purchase', properties: { order_id: 'after-enable' } })]);
    await waitFor('sent after enable', () => o.google.requests.length === 1);
    expect((o.google.requests[0]!.body as { conversions: Array<{ orderId: string }> }).conversions[0]!.orderId).toBe('after-enable');
  });

  it('resumes the queue after a restart mid-retry and sends nothing twice', async () => {
    const o = await org();
    o.google.respondWith([{ status: 503, headers: { 'retry-after': '2' } }]);
    const v = visitor(o.orgId);
    await ingest([v.landing, v.event({ type: 'track', event: 'subscribe', properties: { order_id: 'restart-1' } })]);
    await waitFor('the first attempt refused', async () => (await queueRows(o.orgId))[0]?.last_status === 503);
    await forwarder.stop();
    expect((await queueRows(o.orgId))[0]).toMatchObject({ status: 'queued', attempts: 1 });

    forwarder = await start();
    await waitFor('sent by the new process', async () => (await queueRows(o.orgId))[0]?.status === 'sent');
    await settle();
    expect(o.google.requests).toHaveLength(2);
    expect((await queueRows(o.orgId))[0]).toMatchObject({ status: 'sent', attempts: 2 });
  });
});
