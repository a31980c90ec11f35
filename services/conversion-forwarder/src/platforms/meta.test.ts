import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { Conversion, MetaConfig } from '@svc/conversions';
import { createMetaClient, META_GRAPH_API_VERSION } from './meta';
import { META_STANDARD_EVENTS, metaEventName } from './meta-events';
import { closedPortUrl, startCaptureServer, type CaptureServer, type CapturedRequest, type ScriptedResponse } from './test-support/capture-server';
import { CLEAR_TEXT, sampleConversion } from './test-support/conversions';

const ACCESS_TOKEN = 'EAAB-meta/access+token-SECRET';

let graph: CaptureServer;

beforeEach(async () => {
  graph = await startCaptureServer({ fallback: { status: 200, body: { events_received: 1, messages: [], fbtrace_id: 'trace' } } });
});

afterEach(async () => {
  await graph.close();
});

function client(overrides: Partial<MetaConfig> = {}, opts: { timeoutMs?: number } = {}) {
  return createMetaClient({ pixelId: '1234567890', accessToken: ACCESS_TOKEN, apiBaseUrl: graph.url, ...overrides }, opts);
}

const FIRST_SEEN = new Date('2026-03-10T18:00:00.000Z');
const fbclidClick = { type: 'fbclid', id: 'IwAR2F4-dbP0l7Mn1IawQQGCINEz7PYXQvwjNwB_qa2ofrHyiLjcbCRxTDMgk', firstSeenAt: FIRST_SEEN };
const full = sampleConversion({ click: fbclidClick });
const FBC = `fb.1.${FIRST_SEEN.getTime()}.${fbclidClick.id}`;
const EVENT_TIME = Math.floor(full.eventTime.getTime() / 1000);

const fullUserData = {
  em: [full.hashedEmail],
  ph: [full.hashedPhoneDigits],
  fbc: FBC,
  client_ip_address: '203.0.113.7',
  client_user_agent: 'Mozilla/5.0 (X11; Linux x86_64)',
};

/** The event `full` becomes; each case below spells out only how its own differs (an undefined field: absent, to toEqual). */
const fullEvent = {
  event_name: 'Purchase',
  event_time: EVENT_TIME,
  event_id: 'msg-0001',
  action_source: 'website',
  event_source_url: 'https://shop.example/checkout/done',
  user_data: fullUserData,
  custom_data: { value: 1499.5, currency: 'INR', order_id: 'order-42' },
};

describe('Meta request', () => {
  it.each<[string, Conversion, Record<string, unknown>]>([
    ['full conversion', full, fullEvent],
    ['no value', sampleConversion({ click: fbclidClick, value: null }), { ...fullEvent, custom_data: { order_id: 'order-42' } }],
    [
      'no value, no order id, no page URL',
      sampleConversion({ click: fbclidClick, value: null, orderId: null, pageUrl: null }),
      { ...fullEvent, event_source_url: undefined, custom_data: undefined },
    ],
    [
      'no email, phone, IP or user agent',
      sampleConversion({ click: fbclidClick, hashedEmail: null, hashedPhone: null, hashedPhoneDigits: null, clientIp: null, userAgent: null }),
      { ...fullEvent, user_data: { fbc: FBC } },
    ],
    [
      '$purchase',
      sampleConversion({ click: fbclidClick, eventName: '$purchase', orderId: null }),
      { ...fullEvent, custom_data: { value: 1499.5, currency: 'INR' } },
    ],
    [
      'custom name, as is',
      sampleConversion({ click: fbclidClick, eventName: 'Demo Booked', value: null, orderId: null }),
      { ...fullEvent, event_name: 'Demo Booked', custom_data: undefined },
    ],
  ])('%s', async (_name, conversion, expectedEvent) => {
    await expect(client().send(conversion)).resolves.toEqual({ kind: 'sent', status: 200 });

    expect(graph.requests).toHaveLength(1);
    const [request] = graph.requests as [CapturedRequest];
    expect(request.method).toBe('POST');
    expect(request.path).toBe(`/${META_GRAPH_API_VERSION}/1234567890/events`);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.body).toEqual({ data: [expectedEvent], access_token: ACCESS_TOKEN });
  });

  it('adds test_event_code when the connector has one', async () => {
    await client({ testEventCode: 'TEST12345' }).send(full);
    expect(graph.requests[0]?.body).toMatchObject({ access_token: ACCESS_TOKEN, test_event_code: 'TEST12345' });
  });

  it('sends no clear-text contact detail, and the token only as the body’s access_token', async () => {
    await client().send(full);
    const [request] = graph.requests as [CapturedRequest];
    const everything = JSON.stringify(request);
    for (const clearText of Object.values(CLEAR_TEXT)) expect(everything).not.toContain(clearText);

    expect(JSON.stringify([request.path, request.headers])).not.toContain(ACCESS_TOKEN);
    const { access_token: token, ...rest } = request.body as Record<string, unknown>;
    expect(token).toBe(ACCESS_TOKEN);
    expect(JSON.stringify(rest)).not.toContain(ACCESS_TOKEN);
  });

  it('refuses a click type Meta cannot attribute, without calling Meta', async () => {
    const outcome = await client().send(sampleConversion());
    expect(outcome).toEqual({ kind: 'failed', status: null, error: 'Meta cannot attribute to a gclid click', clickUnusable: false });
    expect(graph.requests).toHaveLength(0);
  });
});

describe('Meta event names', () => {
  it.each([
    ['purchase', 'Purchase'],
    ['$purchase', 'Purchase'],
    ['sign_up', 'CompleteRegistration'],
    ['$sign_up', 'CompleteRegistration'],
    ['add_to_cart', 'AddToCart'],
    ['$add_to_cart', 'AddToCart'],
    ['initiate_checkout', 'InitiateCheckout'],
    ['$initiate_checkout', 'InitiateCheckout'],
    ['lead', 'Lead'],
    ['$lead', 'Lead'],
    ['subscribe', 'Subscribe'],
    ['$subscribe', 'Subscribe'],
    ['Purchase Completed', 'Purchase Completed'],
    ['Purchase', 'Purchase'],
    ['$trial_started', '$trial_started'],
    ['toString', 'toString'],
    ['$$purchase', '$$purchase'],
  ])('%s → %s', (ours, theirs) => {
    expect(metaEventName(ours)).toBe(theirs);
  });

  it('maps exactly the default conversion names', () => {
    expect([...META_STANDARD_EVENTS.keys()]).toEqual(['purchase', 'sign_up', 'add_to_cart', 'initiate_checkout', 'lead', 'subscribe']);
  });
});

function graphError(status: number, error: Record<string, unknown>, headers?: Record<string, string>): ScriptedResponse {
  return { status, body: { error: { type: 'OAuthException', fbtrace_id: 'trace', ...error } }, ...(headers ? { headers } : {}) };
}

describe('Meta outcome', () => {
  it.each<[string, ScriptedResponse, unknown]>([
    ['200', { status: 200, body: { events_received: 1, messages: [], fbtrace_id: 'trace' } }, { kind: 'sent', status: 200 }],
    ['500', { status: 500, body: 'Internal Server Error' }, { kind: 'retry', status: 500, error: 'HTTP 500: Internal Server Error' }],
    [
      '429 with Retry-After',
      graphError(429, { code: 4, message: 'Application request limit reached' }, { 'Retry-After': '120' }),
      { kind: 'retry', status: 429, error: '(#4) Application request limit reached', retryAfterMs: 120_000 },
    ],
    [
      '400 with Meta’s reason',
      graphError(400, {
        code: 100,
        error_subcode: 2804019,
        message: 'Invalid parameter',
        error_user_title: 'Invalid event_time',
        error_user_msg: 'The event_time is too far in the past.',
      }),
      { kind: 'failed', status: 400, error: '(#100/2804019) Invalid event_time: The event_time is too far in the past.', clickUnusable: false },
    ],
    [
      '400 invalid access token',
      graphError(400, { code: 190, message: 'Invalid OAuth access token - Cannot parse access token' }),
      { kind: 'failed', status: 400, error: '(#190) Invalid OAuth access token - Cannot parse access token', clickUnusable: false },
    ],
    [
      '400 user rate limit (code 17)',
      graphError(400, { code: 17, message: 'User request limit reached' }),
      { kind: 'retry', status: 400, error: '(#17) User request limit reached' },
    ],
    [
      '403 ad account rate limit (code 80004)',
      graphError(403, { code: 80004, message: 'There have been too many calls to this ad-account.' }),
      { kind: 'retry', status: 403, error: '(#80004) There have been too many calls to this ad-account.' },
    ],
    [
      '400 flagged transient',
      graphError(400, { code: 2, message: 'An unexpected error has occurred. Please retry your request later.', is_transient: true }),
      { kind: 'retry', status: 400, error: '(#2) An unexpected error has occurred. Please retry your request later.' },
    ],
    [
      '400 malformed click ID',
      graphError(400, {
        code: 100,
        error_subcode: 2804001,
        message: 'Invalid parameter',
        is_transient: false,
        error_user_title: 'Click ID Incorrectly Formatted',
        error_user_msg: 'The click ID (_fbc) parameter is not formatted correctly.',
      }),
      {
        kind: 'failed',
        status: 400,
        error: '(#100/2804001) Click ID Incorrectly Formatted: The click ID (_fbc) parameter is not formatted correctly.',
        clickUnusable: true,
      },
    ],
  ])('%s', async (_name, response, expected) => {
    graph.respondWith([response]);
    await expect(client().send(full)).resolves.toEqual(expected);
  });

  it('retries with status null when nothing listens', async () => {
    const outcome = await client({ apiBaseUrl: await closedPortUrl() }).send(full);
    expect(outcome).toEqual({ kind: 'retry', status: null, error: 'network error: ECONNREFUSED' });
  });

  it('retries with status null when Meta does not answer in time', async () => {
    graph.respondWith([{ status: 200, body: {}, delayMs: 2_000 }]);
    await expect(client({}, { timeoutMs: 200 }).send(full)).resolves.toEqual({ kind: 'retry', status: null, error: 'no answer within 200 ms' });
  });

  it('never returns the access token, even when Meta echoes the request back', async () => {
    graph.respondWith([
      {
        status: 400,
        body: (req: CapturedRequest) => ({ error: { code: 190, message: `Malformed access token ${(req.body as { access_token: string }).access_token}` } }),
      },
      // Raw text this time, from where the token sits in the JSON body, so the 500-character cut keeps it.
      { status: 400, body: (req: CapturedRequest) => `rejected: ${req.rawBody.slice(req.rawBody.indexOf('"access_token"'))}` },
    ]);
    const ads = client();
    await expect(ads.send(full)).resolves.toEqual({ kind: 'failed', status: 400, error: '(#190) Malformed access token [redacted]', clickUnusable: false });
    const echoed = await ads.send(full);
    expect(echoed.kind).toBe('failed');
    expect((echoed as { error: string }).error).toContain('"access_token":"[redacted]"');
    expect((echoed as { error: string }).error).not.toContain(ACCESS_TOKEN);
  });
});
