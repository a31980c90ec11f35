import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import { API_VERSION, BodyLimitHints, ErrorCodes, Headers, Messages } from '@svc/contracts';
import { rejectOversizedContentLength } from './body-limit';
import { methodNotAllowed } from './error-handler';
import type { CheckStatus, ReadinessReport } from './health';
import { HttpError } from './http-error';
import { JSON_CONTENT_TYPE, sendJson } from './json-response';
import { BASE_PATH, rawRequest, startTestApp, type TestApp } from './test-support';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SMALL_LIMIT = 1024;
/** The spec's exposed headers, written out: a test that reads the code's own list could not fail. */
const EXPOSED_HEADERS = 'X-Request-ID, API-Version, X-SVC-Quota-Status, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining';

/** What a failing `pg` query looks like: message and fields that must never reach a client. */
class FakePgError extends Error {
  readonly code = '23505';
  readonly detail = 'Key (email)=(alice@example.com) already exists.';
  readonly table = 'profiles';
  constructor() {
    super('duplicate key value violates unique constraint "profiles_email_key"');
  }
}

let readiness: () => Promise<ReadinessReport> = () => Promise.resolve({ checks: {} });
let oversizedHandlerRan = false;
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp(
    (router) => {
      router.get('/ok', (_req, res) => sendJson(res, 200, { success: true }));
      router.all('/ok', methodNotAllowed(['GET']));
      router.post('/batch-only', (_req, res) => sendJson(res, 200, { success: true }));
      router.all('/batch-only', methodNotAllowed(['POST']));
      router.post('/limited', rejectOversizedContentLength(SMALL_LIMIT, BodyLimitHints.generic), (_req, res) => {
        oversizedHandlerRan = true;
        sendJson(res, 200, { success: true });
      });
      router.get('/boom', () => {
        throw new FakePgError();
      });
      router.get('/boom-async', async () => {
        await Promise.resolve();
        throw new FakePgError();
      });
      router.get('/boom-text', (_req, res) => {
        // A handler that set a different type before failing still yields JSON.
        res.type('text/html');
        throw new Error('<b>boom</b>');
      });
      router.get('/rate-limited', () => {
        throw new HttpError(429, Messages.rateLimitedPerIp(100), {
          code: ErrorCodes.rateLimited,
          headers: { [Headers.retryAfter]: '42', [Headers.rateLimitLimit]: '100', [Headers.rateLimitRemaining]: '0' },
        });
      });
      router.get('/org-limited', () => {
        throw new HttpError(429, Messages.rateLimitedPerOrg(2000), { omitSuccessField: true });
      });
      router.get('/quota', () => {
        throw new HttpError(429, Messages.quotaPaused, {
          body: { upgrade_url: 'https://example.test/upgrade', success: true, error: 'overridden?' },
        });
      });
      router.get('/hidden', () => {
        throw new HttpError(502, 'upstream said: secret internals', { expose: false });
      });
      router.get('/mapped', () => {
        throw new DomainUnavailable();
      });
      router.post('/parsed', express.json({ limit: 10 }), (_req, res) => sendJson(res, 200, { success: true }));
      router.get('/profiles/:id', (req, res) => sendJson(res, 200, { id: req.params.id }));
      // Refuses (as a key check does) without reading the body.
      router.post('/refuse-unread', () => {
        throw new HttpError(401, Messages.invalidApiKey);
      });
      router.get('/after-headers', (_req, res) => {
        res.writeHead(200, { 'Content-Type': JSON_CONTENT_TYPE });
        res.write('{"partial":');
        throw new Error('failed mid-response');
      });
      const nested = express.Router();
      nested.get('/items/:id', (req) => {
        throw new Error(`item ${String(req.params.id)} broke`);
      });
      nested.get('/pass', (_req, _res, next) => next());
      router.use('/nested', nested);
    },
    {
      readiness: () => readiness(),
      readinessTimeoutMs: 200,
      mapError: (err) => (err instanceof DomainUnavailable ? new HttpError(503, Messages.serviceUnavailable) : undefined),
    },
  );
});

afterAll(async () => {
  await app.close();
});

class DomainUnavailable extends Error {}

describe('common headers on every response', () => {
  const cases: Array<{ name: string; method: string; path: string; headers?: Record<string, string>; status: number }> = [
    { name: '200', method: 'GET', path: `${BASE_PATH}/ok`, status: 200 },
    { name: '404', method: 'GET', path: `${BASE_PATH}/nope`, status: 404 },
    { name: '404 outside base path', method: 'GET', path: '/elsewhere', status: 404 },
    { name: '405', method: 'DELETE', path: `${BASE_PATH}/ok`, status: 405 },
    {
      name: '413',
      method: 'POST',
      path: `${BASE_PATH}/limited`,
      headers: { 'content-type': 'application/json', 'content-length': String(SMALL_LIMIT + 1) },
      status: 413,
    },
    { name: '500', method: 'GET', path: `${BASE_PATH}/boom`, status: 500 },
    { name: '429 HttpError', method: 'GET', path: `${BASE_PATH}/rate-limited`, status: 429 },
    { name: 'preflight', method: 'OPTIONS', path: `${BASE_PATH}/v1-batch`, status: 204 },
    { name: 'healthz', method: 'GET', path: '/healthz', status: 200 },
    { name: 'metrics', method: 'GET', path: '/metrics', status: 200 },
  ];

  it.each(cases)('$name', async ({ method, path, headers, status }) => {
    const res = await rawRequest(app.port, { method, path, headers });
    expect(res.status).toBe(status);
    expect(res.headers['x-request-id']).toMatch(UUID);
    expect(res.headers['api-version']).toBe(API_VERSION);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toBe(EXPOSED_HEADERS);
    expect(res.headers['x-powered-by']).toBeUndefined();
    if (status === 204) {
      expect(res.headers['content-type']).toBeUndefined();
      expect(res.text).toBe('');
    } else if (path !== '/metrics') {
      expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    }
  });
});

describe('X-Request-ID', () => {
  const cases: Array<{ name: string; sent: string | undefined; echoed: boolean }> = [
    { name: 'valid id is echoed', sent: 'req-123_abc.DEF', echoed: true },
    { name: 'single character is echoed', sent: 'a', echoed: true },
    { name: '200 characters are echoed', sent: 'a'.repeat(200), echoed: true },
    { name: '201 characters get a new UUID', sent: 'a'.repeat(201), echoed: false },
    { name: 'a space gets a new UUID', sent: 'abc def', echoed: false },
    { name: 'a slash gets a new UUID', sent: 'abc/def', echoed: false },
    { name: 'a colon gets a new UUID', sent: 'abc:def', echoed: false },
    { name: 'non-ASCII gets a new UUID', sent: 'abcé', echoed: false },
    { name: 'empty gets a new UUID', sent: '', echoed: false },
    { name: 'missing gets a new UUID', sent: undefined, echoed: false },
  ];

  it.each(cases)('$name', async ({ sent, echoed }) => {
    const headers = sent === undefined ? undefined : { 'X-Request-ID': sent };
    const res = await fetch(`${app.url}${BASE_PATH}/ok`, { headers });
    const id = res.headers.get('x-request-id');
    if (echoed) expect(id).toBe(sent);
    else expect(id).toMatch(UUID);
  });

  it('mints a different UUID per request', async () => {
    const [a, b] = await Promise.all([fetch(`${app.url}${BASE_PATH}/ok`), fetch(`${app.url}${BASE_PATH}/ok`)]);
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
  });

  it('is echoed on error responses too', async () => {
    const res = await fetch(`${app.url}${BASE_PATH}/boom`, { headers: { 'X-Request-ID': 'trace-500' } });
    expect(res.headers.get('x-request-id')).toBe('trace-500');
  });

  it('rejects duplicated headers (node joins them with ", ")', async () => {
    const res = await rawRequest(app.port, {
      path: `${BASE_PATH}/ok`,
      headers: { 'X-Request-ID': ['one', 'two'] as unknown as string },
    });
    expect(res.headers['x-request-id']).toMatch(UUID);
  });
});

describe('CORS preflight', () => {
  it.each([`${BASE_PATH}/v1-batch`, `${BASE_PATH}/v1-profiles/abc`, '/anything/at/all', '/healthz'])(
    'answers OPTIONS %s with 204 and the exact CORS headers',
    async (path) => {
      const res = await rawRequest(app.port, {
        method: 'OPTIONS',
        path,
        headers: {
          Origin: 'https://shop.example',
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'content-type, authorization',
        },
      });
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['access-control-allow-methods']).toBe('GET, POST, OPTIONS');
      expect(res.headers['access-control-allow-headers']).toBe(`Content-Type, Authorization, ${Headers.requestId}`);
      expect(res.headers['access-control-max-age']).toBe('86400');
      expect(res.headers['api-version']).toBe(API_VERSION);
      expect(res.headers['x-request-id']).toMatch(UUID);
    },
  );

  it('does not put preflight-only headers on other responses', async () => {
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/ok` });
    expect(res.headers['access-control-allow-methods']).toBeUndefined();
    expect(res.headers['access-control-max-age']).toBeUndefined();
  });
});

describe('error envelope', () => {
  it('404 for unmatched routes', async () => {
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/v1-profiles/x/unknown` });
    expect(res.status).toBe(404);
    expect(res.json()).toEqual({ success: false, error: Messages.notFound });
  });

  it('404 when a matched route passes the request on', async () => {
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/nested/pass` });
    expect(res.status).toBe(404);
    expect(res.json()).toEqual({ success: false, error: Messages.notFound });
  });

  it('404 (not 400 or 500) for an undecodable route parameter', async () => {
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/profiles/%E0%A4%A` });
    expect(res.status).toBe(404);
    expect(res.json()).toEqual({ success: false, error: Messages.notFound });
  });

  it.each([
    { path: `${BASE_PATH}/ok`, method: 'POST', allow: 'GET, HEAD, OPTIONS' },
    { path: `${BASE_PATH}/ok`, method: 'PUT', allow: 'GET, HEAD, OPTIONS' },
    { path: `${BASE_PATH}/batch-only`, method: 'GET', allow: 'POST, OPTIONS' },
    { path: `${BASE_PATH}/batch-only`, method: 'DELETE', allow: 'POST, OPTIONS' },
    { path: `${BASE_PATH}/batch-only`, method: 'PATCH', allow: 'POST, OPTIONS' },
  ])('405 for $method $path with Allow: $allow', async ({ path, method, allow }) => {
    const res = await rawRequest(app.port, { method, path });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe(allow);
    expect(res.json()).toEqual({ success: false, error: Messages.methodNotAllowed });
  });

  it.each([`${BASE_PATH}/boom`, `${BASE_PATH}/boom-async`])(
    'a thrown pg-like error (%s) is a bare 500 that leaks nothing',
    async (path) => {
      const res = await rawRequest(app.port, { path, headers: { 'X-Request-ID': 'pg-failure-1' } });
      expect(res.status).toBe(500);
      expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
      expect(res.json()).toStrictEqual({ success: false, error: Messages.internalError });
      for (const leak of ['duplicate', 'constraint', 'profiles', 'alice', '23505', 'stack', 'at ']) {
        expect(res.text).not.toContain(leak);
      }
      // The details go to the log instead, tied to the request.
      const logged = app.logs.find((line) => line.requestId === 'pg-failure-1' && line.msg === 'unhandled error');
      expect(logged).toBeDefined();
      expect(JSON.stringify(logged)).toContain('profiles_email_key');
    },
  );

  it('500 is JSON even when the handler had set another Content-Type', async () => {
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/boom-text` });
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    expect(res.json()).toStrictEqual({ success: false, error: Messages.internalError });
  });

  it('HttpError renders code and headers', async () => {
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/rate-limited` });
    expect(res.status).toBe(429);
    expect(res.json()).toStrictEqual({
      success: false,
      error: Messages.rateLimitedPerIp(100),
      code: ErrorCodes.rateLimited,
    });
    expect(res.headers['retry-after']).toBe('42');
    expect(res.headers['x-ratelimit-limit']).toBe('100');
    expect(res.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('HttpError can omit the success field (per-organization 429)', async () => {
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/org-limited` });
    expect(res.status).toBe(429);
    expect(res.json()).toStrictEqual({ error: Messages.rateLimitedPerOrg(2000) });
  });

  it('extra body fields are added but cannot override success or error', async () => {
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/quota` });
    expect(res.json()).toStrictEqual({
      success: false,
      error: Messages.quotaPaused,
      upgrade_url: 'https://example.test/upgrade',
    });
  });

  it('expose: false hides the message', async () => {
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/hidden` });
    expect(res.status).toBe(502);
    expect(res.json()).toStrictEqual({ success: false, error: Messages.internalError });
  });

  it('mapError translates service errors', async () => {
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/mapped` });
    expect(res.status).toBe(503);
    expect(res.json()).toStrictEqual({ success: false, error: Messages.serviceUnavailable });
  });

  it.each([
    { name: 'parse failure', body: '{"a":', status: 400, expected: { success: false, error: Messages.invalidJson } },
    {
      name: 'too large',
      body: '{"a":"0123456789"}',
      status: 413,
      expected: { success: false, error: Messages.bodyTooLarge(10), limit_bytes: 10, hint: BodyLimitHints.generic },
    },
  ])('body-parser errors do not leak their text: $name', async ({ body, status, expected }) => {
    const res = await rawRequest(app.port, {
      method: 'POST',
      path: `${BASE_PATH}/parsed`,
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(status);
    expect(res.json()).toStrictEqual(expected);
  });

  it('an error after headers were sent cuts the connection and the server keeps serving', async () => {
    await expect(rawRequest(app.port, { path: `${BASE_PATH}/after-headers` })).rejects.toThrow();
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/ok` });
    expect(res.status).toBe(200);
  });
});

describe('an answer given before the body was read', () => {
  it.each([
    ['a large declared body: not read, the connection ends with the answer', { 'content-length': String(64 * 1024) }, 'close'],
    ['a chunked body of unknown size: the same', { 'transfer-encoding': 'chunked' }, 'close'],
    ['a small body: drained, the connection kept', { 'content-length': String(64 * 1024 - 1) }, 'keep-alive'],
  ])('%s', async (_name, headers, connection) => {
    // Declares (or streams) a body it never finishes sending: only an early answer can come back.
    const res = await rawRequest(app.port, { method: 'POST', path: `${BASE_PATH}/refuse-unread`, headers: { 'content-type': 'application/json', connection: 'keep-alive', ...headers }, body: connection === 'keep-alive' ? ' '.repeat(64 * 1024 - 1) : undefined });
    expect(res.status).toBe(401);
    expect(res.headers.connection).toBe(connection);
  });
});

describe('413 from Content-Length', () => {
  it('answers before the body is read; the handler never runs', async () => {
    oversizedHandlerRan = false;
    const res = await rawRequest(app.port, {
      method: 'POST',
      path: `${BASE_PATH}/limited`,
      // Declares more than it sends: only the header can have triggered the answer.
      headers: { 'content-type': 'application/json', 'content-length': String(SMALL_LIMIT + 1) },
    });
    expect(res.status).toBe(413);
    expect(res.json()).toStrictEqual({
      success: false,
      error: Messages.bodyTooLarge(SMALL_LIMIT),
      limit_bytes: SMALL_LIMIT,
      hint: BodyLimitHints.generic,
    });
    expect(res.headers.connection).toBe('close');
    expect(oversizedHandlerRan).toBe(false);
  });

  it('lets a declared length at the limit through', async () => {
    oversizedHandlerRan = false;
    const res = await rawRequest(app.port, {
      method: 'POST',
      path: `${BASE_PATH}/limited`,
      headers: { 'content-type': 'application/json', 'content-length': String(SMALL_LIMIT) },
      body: ' '.repeat(SMALL_LIMIT),
    });
    expect(res.status).toBe(200);
    expect(oversizedHandlerRan).toBe(true);
  });
});

describe('health endpoints', () => {
  it('GET /healthz is liveness only', async () => {
    readiness = () => Promise.resolve({ checks: { db: 'fail' } });
    const res = await rawRequest(app.port, { path: '/healthz' });
    expect(res.status).toBe(200);
    expect(res.json()).toStrictEqual({ status: 'ok' });
  });

  it('health routes live at the root, not under the base path', async () => {
    const res = await rawRequest(app.port, { path: `${BASE_PATH}/healthz` });
    expect(res.status).toBe(404);
  });

  const readyCases: Array<{
    name: string;
    probe: () => Promise<ReadinessReport>;
    status: number;
    body: { status: string; checks: Record<string, CheckStatus> };
  }> = [
    {
      name: 'all checks ok',
      probe: () => Promise.resolve({ checks: { db: 'ok', kafka: 'ok' } }),
      status: 200,
      body: { status: 'ready', checks: { db: 'ok', kafka: 'ok' } },
    },
    {
      name: 'no checks',
      probe: () => Promise.resolve({ checks: {} }),
      status: 200,
      body: { status: 'ready', checks: {} },
    },
    {
      name: 'one check failing',
      probe: () => Promise.resolve({ checks: { db: 'ok', kafka: 'fail' } }),
      status: 503,
      body: { status: 'not_ready', checks: { db: 'ok', kafka: 'fail' } },
    },
    {
      name: 'probe throws (its message stays out of the body)',
      probe: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.5:5432')),
      status: 503,
      body: { status: 'not_ready', checks: {} },
    },
    {
      name: 'probe slower than the timeout',
      probe: () => new Promise(() => undefined),
      status: 503,
      body: { status: 'not_ready', checks: {} },
    },
  ];

  it.each(readyCases)('GET /readyz: $name → $status', async ({ probe, status, body }) => {
    readiness = probe;
    const res = await rawRequest(app.port, { path: '/readyz' });
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    expect(res.json()).toStrictEqual(body);
  });
});

describe('GET /metrics', () => {
  it('exposes the request-duration histogram labelled by route pattern, never raw paths', async () => {
    await rawRequest(app.port, { path: `${BASE_PATH}/ok` });
    await rawRequest(app.port, { path: `${BASE_PATH}/profiles/p-123` });
    await rawRequest(app.port, { path: `${BASE_PATH}/nested/items/i-456` });
    await rawRequest(app.port, { path: `${BASE_PATH}/no/such/route-789` });

    const res = await rawRequest(app.port, { path: '/metrics' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(app.metrics.registry.contentType);
    expect(res.text).toContain('# TYPE http_request_duration_seconds histogram');
    const series = (route: string, status: number, method = 'GET'): string =>
      `http_request_duration_seconds_count{method="${method}",route="${route}",status="${status}"}`;
    expect(res.text).toContain(series(`${BASE_PATH}/ok`, 200));
    expect(res.text).toContain(series(`${BASE_PATH}/profiles/:id`, 200));
    // The error left the nested router before it was rendered; the label keeps the full pattern.
    expect(res.text).toContain(series(`${BASE_PATH}/nested/items/:id`, 500));
    expect(res.text).toContain(series('unmatched', 404));
    expect(res.text).toContain(series('/healthz', 200));
    expect(res.text).toContain(`http_request_duration_seconds_bucket{le="0.005",method="GET",route="${BASE_PATH}/ok",status="200"}`);
    for (const raw of ['p-123', 'i-456', 'route-789']) expect(res.text).not.toContain(raw);
  });

  it('writes one access-log line per request with the route pattern', async () => {
    await rawRequest(app.port, { path: `${BASE_PATH}/profiles/p-999`, headers: { 'X-Request-ID': 'access-log-1' } });
    const line = app.logs.find((entry) => entry.requestId === 'access-log-1' && entry.msg === 'request completed');
    expect(line).toMatchObject({ method: 'GET', route: `${BASE_PATH}/profiles/:id`, status: 200 });
    expect(JSON.stringify(line)).not.toContain('p-999');
  });
});

describe('several apps in one process', () => {
  it('each has its own registry', async () => {
    const other = await startTestApp(() => undefined);
    try {
      const res = await rawRequest(other.port, { path: '/metrics' });
      expect(res.status).toBe(200);
      expect(res.text).not.toContain(`route="${BASE_PATH}/ok"`);
    } finally {
      await other.close();
    }
  });
});
