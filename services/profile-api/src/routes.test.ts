import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Messages } from '@svc/contracts';
import { createLogger, createMetrics, serveHttp, type RunningHttpServer } from '@svc/runtime';
import { FailedAuthThrottle } from '@svc/accounts';
import { verifiedKey } from '@svc/testkit';
import { CursorCodec } from './cursor';
import { mountProfiles } from './routes';
import type { ProfileStore } from './store';

/** The error mapping of the routes, on doubles: what a failing database looks like to a client. */
describe('Profiles API failures', () => {
  let server: RunningHttpServer;
  let failure: unknown;
  const key = verifiedKey({ keyId: 'k1', orgId: '0b6f3a8e-8f9c-4d0e-9a51-1c2d3e4f5a6b', type: 'admin' });
  const failing = async () => {
    throw failure;
  };
  const store = { list: failing, detail: failing, events: failing, identities: failing, search: failing, merge: failing, resolve: failing } as unknown as ProfileStore;

  beforeAll(async () => {
    const logger = createLogger({ name: 'profile-routes-test', level: 'silent' });
    server = await serveHttp({
      config: { HOST: '127.0.0.1', PORT: 0, TRUSTED_PROXIES: [], TLS_CERT_FILE: undefined, TLS_KEY_FILE: undefined, REQUIRE_HTTPS: false },
      logger,
      metrics: createMetrics({ collectDefaultMetrics: false }),
      readiness: async () => ({ checks: {} }),
      mount: (router) =>
        mountProfiles(router, {
          keys: { verifyApiKey: async () => key },
          rateLimiter: { hit: async (rules) => rules.map((rule) => ({ rule, hits: 1, allowed: true, remaining: rule.limit - 1, retryAfterSeconds: 60 })) },
          store,
          cursors: new CursorCodec('c'.repeat(32)),
          trustedProxies: [],
          failedAuth: new FailedAuthThrottle(1_000_000),
          logger,
        }),
    });
  });
  afterAll(() => server.close());

  const call = async (method: string, path: string) => {
    const res = await fetch(`${server.url}/functions/v1/v1-profiles${path}`, {
      method,
      headers: { authorization: 'Bearer uk_admin_x', 'content-type': 'application/json' },
      body: method === 'POST' ? JSON.stringify({ source_profile_id: 'a', target_profile_id: 'b' }) : undefined,
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, unknown> };
  };
  const routes: Array<[string, string]> = [
    ['GET', ''],
    ['GET', '/search?q=x'],
    ['GET', '/p1'],
    ['GET', '/p1/events'],
    ['GET', '/p1/identities'],
    ['POST', '/merge'],
  ];

  it.each(routes)('%s %s: the database unreachable → 503 with Retry-After 30', async (method, path) => {
    failure = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    expect(await call(method, path)).toEqual({ status: 503, retryAfter: '30', body: { success: false, error: Messages.serviceUnavailable } });
  });

  it.each(routes)('%s %s: a pool timeout → 503', async (method, path) => {
    failure = Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), { name: 'KnexTimeoutError' });
    expect((await call(method, path)).status).toBe(503);
  });

  it.each(routes)('%s %s: a bad statement is our bug → 500, no database text', async (method, path) => {
    failure = Object.assign(new Error('select nope - column "nope" does not exist'), { code: '42703' });
    expect(await call(method, path)).toEqual({ status: 500, retryAfter: null, body: { success: false, error: Messages.internalError } });
  });

  it.each(routes)('%s %s: anything else → 500 Internal server error', async (method, path) => {
    failure = new TypeError('boom');
    expect(await call(method, path)).toEqual({ status: 500, retryAfter: null, body: { success: false, error: Messages.internalError } });
  });
});
