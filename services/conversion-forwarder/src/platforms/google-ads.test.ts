import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { Conversion, GoogleAdsConfig } from '@svc/conversions';
import { createGoogleAdsClient, GOOGLE_ADS_API_VERSION, type GoogleAdsClientOptions } from './google-ads';
import { TOO_RECENT_RETRY_MS } from './google-ads-errors';
import { closedPortUrl, startCaptureServer, type CaptureServer, type CapturedRequest, type ScriptedResponse } from './test-support/capture-server';
import { CLEAR_TEXT, sampleConversion } from './test-support/conversions';

// Secret-looking values with characters that change under URL encoding, so an
// echoed form body tests the encoded spellings too.
const SECRETS = {
  developerToken: 'devtok-SECRET-0123456789',
  clientSecret: 'GOCSPX-client/secret+SECRET',
  refreshToken: '1//0g-refresh/token+SECRET',
};

let api: CaptureServer;
let oauth: CaptureServer;
let tokensIssued: number;

/** Each token request gets a new, recognisable token. */
const grantToken: ScriptedResponse = {
  status: 200,
  body: () => ({ access_token: `ya29.access-SECRET-${++tokensIssued}`, expires_in: 3599, token_type: 'Bearer' }),
};

beforeEach(async () => {
  tokensIssued = 0;
  api = await startCaptureServer({ fallback: { status: 200, body: { results: [{}], jobId: '1' } } });
  oauth = await startCaptureServer({ fallback: grantToken });
});

afterEach(async () => {
  await Promise.all([api.close(), oauth.close()]);
});

function config(overrides: Partial<GoogleAdsConfig> = {}): GoogleAdsConfig {
  return {
    customerId: '123-456-7890',
    conversionActionId: '987654321',
    developerToken: SECRETS.developerToken,
    clientId: 'client-id.apps.googleusercontent.com',
    clientSecret: SECRETS.clientSecret,
    refreshToken: SECRETS.refreshToken,
    apiBaseUrl: api.url,
    tokenUrl: `${oauth.url}/token`,
    ...overrides,
  };
}

function client(overrides: Partial<GoogleAdsConfig> = {}, opts: GoogleAdsClientOptions = {}) {
  return createGoogleAdsClient(config(overrides), opts);
}

const UPLOAD_PATH = `/${GOOGLE_ADS_API_VERSION}/customers/1234567890:uploadClickConversions`;
const ACTION = 'customers/1234567890/conversionActions/987654321';
const full = sampleConversion();

/** The conversion `full` uploads as; each case below spells out only how its own differs (an undefined field: absent, to toEqual). */
const fullUpload = {
  gclid: 'Cj0KCQiA-gclid-sample',
  conversionAction: ACTION,
  conversionDateTime: '2026-03-14 09:26:53+00:00',
  conversionValue: 1499.5,
  currencyCode: 'INR',
  orderId: 'order-42',
  userIdentifiers: [{ hashedEmail: full.hashedEmail }, { hashedPhoneNumber: full.hashedPhone }],
};

describe('Google Ads request', () => {
  it.each<[string, Conversion, Record<string, unknown>]>([
    ['full conversion', full, fullUpload],
    ['no value', sampleConversion({ value: null }), { ...fullUpload, conversionValue: undefined, currencyCode: undefined }],
    [
      'no email or phone, no order id',
      sampleConversion({ hashedEmail: null, hashedPhone: null, hashedPhoneDigits: null, orderId: null }),
      { ...fullUpload, orderId: undefined, userIdentifiers: undefined },
    ],
    [
      'email only, zero value',
      sampleConversion({ hashedPhone: null, hashedPhoneDigits: null, value: 0, currency: 'USD' }),
      { ...fullUpload, conversionValue: 0, currencyCode: 'USD', userIdentifiers: [{ hashedEmail: full.hashedEmail }] },
    ],
    [
      'gbraid instead of gclid',
      sampleConversion({ click: { type: 'gbraid', id: 'gbraid-sample', firstSeenAt: full.click.firstSeenAt }, hashedEmail: null, hashedPhone: null }),
      { ...fullUpload, gclid: undefined, gbraid: 'gbraid-sample', userIdentifiers: undefined },
    ],
    [
      'wbraid instead of gclid',
      sampleConversion({ click: { type: 'wbraid', id: 'wbraid-sample', firstSeenAt: full.click.firstSeenAt }, hashedEmail: null, hashedPhone: null }),
      { ...fullUpload, gclid: undefined, wbraid: 'wbraid-sample', userIdentifiers: undefined },
    ],
  ])('%s', async (_name, conversion, expectedConversion) => {
    await expect(client().send(conversion)).resolves.toEqual({ kind: 'sent', status: 200 });

    expect(api.requests).toHaveLength(1);
    const [request] = api.requests as [CapturedRequest];
    expect(request.method).toBe('POST');
    expect(request.path).toBe(UPLOAD_PATH);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers.authorization).toBe('Bearer ya29.access-SECRET-1');
    expect(request.headers['developer-token']).toBe(SECRETS.developerToken);
    expect(request.headers['login-customer-id']).toBeUndefined();
    expect(request.body).toEqual({ conversions: [expectedConversion], partialFailure: true });
  });

  it('sends login-customer-id, digits only, when the customer is reached through a manager account', async () => {
    await client({ loginCustomerId: '111-222-3333' }).send(full);
    expect(api.requests[0]?.headers['login-customer-id']).toBe('1112223333');
  });

  it('converts the event time to UTC with an explicit offset', async () => {
    await client().send(sampleConversion({ eventTime: new Date('2026-12-31T23:59:59.999-05:30') }));
    expect(api.requests[0]?.body).toMatchObject({ conversions: [{ conversionDateTime: '2027-01-01 05:29:59+00:00' }] });
  });

  it('asks the token endpoint with a form-encoded refresh_token grant', async () => {
    await client().send(full);
    expect(oauth.requests).toHaveLength(1);
    const [request] = oauth.requests as [CapturedRequest];
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/token');
    expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request.body).toEqual({
      grant_type: 'refresh_token',
      client_id: 'client-id.apps.googleusercontent.com',
      client_secret: SECRETS.clientSecret,
      refresh_token: SECRETS.refreshToken,
    });
  });

  it('sends no clear-text contact detail, and each credential only in its own place', async () => {
    await client({ loginCustomerId: '111-222-3333' }).send(full);
    const [upload] = api.requests as [CapturedRequest];
    const [tokenRequest] = oauth.requests as [CapturedRequest];
    const everything = JSON.stringify([upload, tokenRequest]);
    for (const clearText of Object.values(CLEAR_TEXT)) expect(everything).not.toContain(clearText);

    const { authorization, 'developer-token': developerToken, ...otherHeaders } = upload.headers;
    expect(authorization).toBe('Bearer ya29.access-SECRET-1');
    expect(developerToken).toBe(SECRETS.developerToken);
    const uploadElsewhere = JSON.stringify([upload.path, otherHeaders, upload.rawBody]);
    for (const secret of [...Object.values(SECRETS), 'ya29.access-SECRET-1']) expect(uploadElsewhere).not.toContain(secret);
    // The refresh grant carries only what the grant needs: no developer token.
    expect(JSON.stringify(tokenRequest)).not.toContain(SECRETS.developerToken);
  });

  it('refuses a click type Google cannot attribute, without calling Google', async () => {
    const outcome = await client().send(sampleConversion({ click: { type: 'fbclid', id: 'x', firstSeenAt: full.click.firstSeenAt } }));
    expect(outcome).toEqual({ kind: 'failed', status: null, error: 'Google Ads cannot attribute to a fbclid click', clickUnusable: false });
    expect(api.requests).toHaveLength(0);
  });
});

function adsFailure(errors: Array<{ code: Record<string, string>; message: string; details?: unknown }>) {
  return {
    code: 3,
    message: 'Request contains an invalid argument.',
    details: [
      {
        '@type': 'type.googleapis.com/google.ads.googleads.v26.errors.GoogleAdsFailure',
        errors: errors.map((e) => ({ errorCode: e.code, message: e.message, ...(e.details ? { details: e.details } : {}) })),
        requestId: 'req-1',
      },
    ],
  };
}

function partialFailure(code: string, message: string): ScriptedResponse {
  return { status: 200, body: { partialFailureError: adsFailure([{ code: { conversionUploadError: code }, message }]), results: [{}], jobId: '7' } };
}

describe('Google Ads outcome', () => {
  it.each<[string, ScriptedResponse, unknown]>([
    ['200 with a result', { status: 200, body: { results: [{ gclid: 'x' }], jobId: '7' } }, { kind: 'sent', status: 200 }],
    [
      '500',
      { status: 500, body: { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } } },
      { kind: 'retry', status: 500, error: 'Internal error encountered.' },
    ],
    [
      '429 with Retry-After',
      { status: 429, headers: { 'Retry-After': '30' }, body: { error: { code: 429, message: 'Resource has been exhausted.' } } },
      { kind: 'retry', status: 429, error: 'Resource has been exhausted.', retryAfterMs: 30_000 },
    ],
    [
      '429 with the quota error stating its own delay',
      {
        status: 429,
        body: {
          error: adsFailure([
            {
              code: { quotaError: 'RESOURCE_TEMPORARILY_EXHAUSTED' },
              message: 'Too many requests. Retry in 27 seconds.',
              details: { quotaErrorDetails: { rateScope: 'ACCOUNT', rateName: 'Requests per service', retryDelay: '27s' } },
            },
          ]),
        },
      },
      { kind: 'retry', status: 429, error: 'RESOURCE_TEMPORARILY_EXHAUSTED: Too many requests. Retry in 27 seconds.', retryAfterMs: 27_000 },
    ],
    [
      '400 with Google’s reason',
      {
        status: 400,
        body: { error: adsFailure([{ code: { conversionUploadError: 'NO_CONVERSION_ACTION_FOUND' }, message: 'The conversion action cannot be found.' }]) },
      },
      { kind: 'failed', status: 400, error: 'NO_CONVERSION_ACTION_FOUND: The conversion action cannot be found.', clickUnusable: false },
    ],
    [
      '403 developer token not approved',
      {
        status: 403,
        body: { error: adsFailure([{ code: { authorizationError: 'DEVELOPER_TOKEN_NOT_APPROVED' }, message: 'The developer token is only approved for test accounts.' }]) },
      },
      {
        kind: 'failed',
        status: 403,
        error: 'DEVELOPER_TOKEN_NOT_APPROVED: The developer token is only approved for test accounts.',
        clickUnusable: false,
      },
    ],
    ['400 that is not JSON', { status: 400, body: 'Bad Request' }, { kind: 'failed', status: 400, error: 'HTTP 400: Bad Request', clickUnusable: false }],
    [
      'partial failure: expired click',
      partialFailure('EXPIRED_EVENT', "The imported event can't be recorded because its click occurred before this conversion's click-through window."),
      {
        kind: 'failed',
        status: 200,
        error: "EXPIRED_EVENT: The imported event can't be recorded because its click occurred before this conversion's click-through window.",
        clickUnusable: true,
      },
    ],
    [
      'partial failure: undecodable gclid',
      partialFailure('UNPARSEABLE_GCLID', 'The imported gclid could not be decoded.'),
      { kind: 'failed', status: 200, error: 'UNPARSEABLE_GCLID: The imported gclid could not be decoded.', clickUnusable: true },
    ],
    [
      'partial failure: click not attributable',
      partialFailure('EVENT_NOT_FOUND', 'The imported event could not be attributed to a click.'),
      { kind: 'failed', status: 200, error: 'EVENT_NOT_FOUND: The imported event could not be attributed to a click.', clickUnusable: true },
    ],
    [
      'partial failure: conversion before its click',
      partialFailure('CONVERSION_PRECEDES_EVENT', 'The imported event has a conversion_date_time that precedes the click.'),
      {
        kind: 'failed',
        status: 200,
        error: 'CONVERSION_PRECEDES_EVENT: The imported event has a conversion_date_time that precedes the click.',
        clickUnusable: false,
      },
    ],
    [
      'partial failure: order id already recorded (our own earlier attempt got through)',
      partialFailure('ORDER_ID_ALREADY_IN_USE', 'The imported event includes an order ID that was previously recorded.'),
      { kind: 'sent', status: 200 },
    ],
    [
      'partial failure: click too recent',
      partialFailure('TOO_RECENT_EVENT', 'The click associated with the given identifier occurred less than 6 hours ago.'),
      {
        kind: 'retry',
        status: 200,
        error: 'TOO_RECENT_EVENT: The click associated with the given identifier occurred less than 6 hours ago.',
        retryAfterMs: TOO_RECENT_RETRY_MS,
      },
    ],
    [
      'partial failure without GoogleAdsFailure details',
      { status: 200, body: { partialFailureError: { code: 3, message: 'Invalid gclid, at conversions[0]' } } },
      { kind: 'failed', status: 200, error: 'Invalid gclid, at conversions[0]', clickUnusable: false },
    ],
  ])('%s', async (_name, response, expected) => {
    api.respondWith([response]);
    await expect(client().send(full)).resolves.toEqual(expected);
  });

  it('retries with status null when nothing listens', async () => {
    const outcome = await client({ apiBaseUrl: await closedPortUrl() }).send(full);
    expect(outcome).toEqual({ kind: 'retry', status: null, error: expect.stringContaining('ECONNREFUSED') });
  });

  it('retries with status null when the API does not answer in time', async () => {
    api.respondWith([{ status: 200, body: {}, delayMs: 2_000 }]);
    const outcome = await client({}, { timeoutMs: 200 }).send(full);
    expect(outcome).toEqual({ kind: 'retry', status: null, error: 'no answer within 200 ms' });
  });
});

describe('Google OAuth access token', () => {
  it('is fetched once and reused across sends', async () => {
    const ads = client();
    await ads.send(full);
    await ads.send(full);
    expect(oauth.requests).toHaveLength(1);
    expect(api.requests.map((r) => r.headers.authorization)).toEqual(['Bearer ya29.access-SECRET-1', 'Bearer ya29.access-SECRET-1']);
  });

  it('is refreshed a minute before Google says it expires', async () => {
    let nowMs = Date.parse('2026-03-14T10:00:00Z');
    const ads = client({}, { now: () => nowMs });
    await ads.send(full);
    nowMs += (3599 - 61) * 1000;
    await ads.send(full);
    expect(oauth.requests).toHaveLength(1);
    nowMs += 2 * 1000;
    await ads.send(full);
    expect(oauth.requests).toHaveLength(2);
    expect(api.requests.map((r) => r.headers.authorization)).toEqual([
      'Bearer ya29.access-SECRET-1',
      'Bearer ya29.access-SECRET-1',
      'Bearer ya29.access-SECRET-2',
    ]);
  });

  it('is fetched once for concurrent sends', async () => {
    const ads = client();
    await Promise.all([ads.send(full), ads.send(full), ads.send(full)]);
    expect(oauth.requests).toHaveLength(1);
  });

  it('is refreshed once after a 401, and the upload retried once', async () => {
    api.respondWith([{ status: 401, body: { error: { code: 401, message: 'Request had invalid authentication credentials.' } } }]);
    await expect(client().send(full)).resolves.toEqual({ kind: 'sent', status: 200 });
    expect(oauth.requests).toHaveLength(2);
    expect(api.requests.map((r) => r.headers.authorization)).toEqual(['Bearer ya29.access-SECRET-1', 'Bearer ya29.access-SECRET-2']);
  });

  it('fails on a second 401 instead of looping', async () => {
    const unauthorised: ScriptedResponse = { status: 401, body: { error: { code: 401, message: 'Request had invalid authentication credentials.' } } };
    api.respondWith([unauthorised, unauthorised, unauthorised]);
    const outcome = await client().send(full);
    expect(outcome).toEqual({ kind: 'failed', status: 401, error: 'Request had invalid authentication credentials.', clickUnusable: false });
    expect(oauth.requests).toHaveLength(2);
    expect(api.requests).toHaveLength(2);
  });

  it.each<[string, ScriptedResponse, unknown]>([
    [
      'invalid_grant',
      { status: 400, body: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' } },
      {
        kind: 'failed',
        status: 400,
        error: 'Google OAuth refused the refresh token (invalid_grant: Token has been expired or revoked.); re-authorise the Google Ads connection',
        clickUnusable: false,
      },
    ],
    [
      'invalid_client',
      { status: 401, body: { error: 'invalid_client', error_description: 'Unauthorized' } },
      {
        kind: 'failed',
        status: 401,
        error: 'Google OAuth refused the refresh token (invalid_client: Unauthorized); re-authorise the Google Ads connection',
        clickUnusable: false,
      },
    ],
    ['503', { status: 503, body: 'upstream unavailable' }, { kind: 'retry', status: 503, error: 'Google OAuth token endpoint: HTTP 503: upstream unavailable' }],
    [
      '200 without a token',
      { status: 200, body: { token_type: 'Bearer' } },
      { kind: 'retry', status: 200, error: 'Google OAuth token endpoint: HTTP 200: {"token_type":"Bearer"}' },
    ],
  ])('endpoint answering %s', async (_name, response, expected) => {
    oauth.respondWith([response]);
    await expect(client().send(full)).resolves.toEqual(expected);
    expect(api.requests).toHaveLength(0);
  });

  it('endpoint unreachable: retry with status null', async () => {
    const outcome = await client({ tokenUrl: `${await closedPortUrl()}/token` }).send(full);
    expect(outcome).toEqual({ kind: 'retry', status: null, error: expect.stringMatching(/^Google OAuth token endpoint: network error: ECONNREFUSED/) });
  });
});

describe('Google Ads secrets in errors', () => {
  it('never returns a credential, even when the API echoes the request back', async () => {
    api.respondWith([
      {
        status: 400,
        body: (req: CapturedRequest) => ({
          error: { code: 400, message: `you sent ${String(req.headers.authorization)} with ${String(req.headers['developer-token'])}` },
        }),
      },
    ]);
    const outcome = await client().send(full);
    expect(outcome).toEqual({ kind: 'failed', status: 400, error: 'you sent Bearer [redacted] with [redacted]', clickUnusable: false });
  });

  it('never returns a credential, even when the token endpoint echoes the form back', async () => {
    oauth.respondWith([{ status: 400, body: (req: CapturedRequest) => ({ error: 'invalid_grant', error_description: `bad request: ${req.rawBody}` }) }]);
    const outcome = await client().send(full);
    expect(outcome.kind).toBe('failed');
    const error = (outcome as { error: string }).error;
    expect(error).toContain('client_secret=[redacted]');
    expect(error).toContain('refresh_token=[redacted]');
    for (const secret of Object.values(SECRETS)) {
      expect(error).not.toContain(secret);
      expect(error).not.toContain(encodeURIComponent(secret));
    }
  });
});
