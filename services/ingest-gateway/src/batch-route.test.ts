import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { BodyLimitHints, ErrorCodes, EventReasons, Messages, Topics, type RawEventEnvelope, type RawEventSealed } from '@svc/contracts';
import { BusUnavailableError, SchemaViolationError, type OutgoingMessage, type ProduceResult } from '@svc/bus';
import {
  createApp,
  createLogger,
  createMetrics,
  startHttpServer,
  type RunningHttpServer,
} from '@svc/runtime';
import { FailedAuthThrottle, InProcessRateLimiter, type RateLimitRule, type RateLimitVerdict, type VerifiedKey } from '@svc/accounts';
import { verifiedKey } from '@svc/testkit';
import { mountBatchRoute, type GatewayDeps } from './batch-route';
import { gatewayMetrics } from './metrics';
import { SubjectKeysDouble } from './test-support/subject-keys-double';

/**
 * The route's every status, message and header, table-driven, against
 * hand-written doubles of its ports (key store, limiter, usage, bus). The same
 * route runs against real PostgreSQL and the real log in the integration suite.
 */
const WRITE = 'uk_live_' + 'w'.repeat(40);
const READ = 'uk_read_' + 'r'.repeat(40);
const ADMIN = 'uk_admin_' + 'a'.repeat(40);
const NOW = new Date('2026-11-21T12:00:30.000Z');
const ORG = '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f';


class Doubles {
  reset(): void {
    Object.assign(this, new Doubles());
  }
  keys = new Map<string, VerifiedKey>([
    [WRITE, verifiedKey({})],
    [READ, verifiedKey({ type: 'read' })],
    [ADMIN, verifiedKey({ type: 'admin' })],
  ]);
  keyError: Error | undefined;
  hits = new Map<string, number>();
  usage = 0;
  usageError: Error | undefined;
  /** What the log was given, opened with the key it names (`sealed`: as given). */
  produced: Array<OutgoingMessage<RawEventEnvelope>> = [];
  sealed: Array<OutgoingMessage<RawEventSealed>> = [];
  subjectKeys = new SubjectKeysDouble();
  produceFailsAt = new Set<number>();
  /** messageIds the bus refuses by throwing for the whole call, as its schema check and the Postgres log's one statement do. */
  poison = new Set<string>();
  produceCalls = 0;
  busDown = false;

  deps(): Omit<GatewayDeps, 'metrics' | 'logger'> {
    return {
      failedAuth: new FailedAuthThrottle(1_000_000),
      keys: {
        verifyApiKey: async (k) => {
          if (this.keyError) throw this.keyError;
          return this.keys.get(k);
        },
      },
      rateLimiter: {
        hit: async (rules: readonly RateLimitRule[]): Promise<RateLimitVerdict[]> =>
          rules.map((rule) => {
            const hits = (this.hits.get(rule.bucket) ?? 0) + 1;
            this.hits.set(rule.bucket, hits);
            return { rule, hits, allowed: hits <= rule.limit, remaining: Math.max(0, rule.limit - hits), retryAfterSeconds: 30 };
          }),
      },
      fallbackRateLimiter: new InProcessRateLimiter(),
      readUsage: async () => {
        if (this.usageError) throw this.usageError;
        return this.usage;
      },
      bus: {
        produce: async <T>(_topic: unknown, messages: readonly OutgoingMessage<T>[]): Promise<ProduceResult[]> => {
          if (this.busDown) throw new BusUnavailableError('log unreachable');
          this.produceCalls++;
          const opened = messages.map((m) => ({ key: m.key, value: this.subjectKeys.open(m.value as RawEventSealed) }));
          const poisoned = opened.find((m) => this.poison.has(m.value.event.messageId));
          if (poisoned) throw new SchemaViolationError(Topics.eventsRaw.name, '/event/groupId must be string');
          return messages.map((m, i) => {
            if (this.produceFailsAt.has(i)) return { ok: false, error: new Error('broker said no') };
            this.produced.push(opened[i]!);
            this.sealed.push(m as OutgoingMessage<RawEventSealed>);
            return { ok: true };
          });
        },
      },
      // Through `this`: reset() replaces the double between tests.
      subjectKeys: { forSubjects: (orgId, anonymousIds) => this.subjectKeys.forSubjects(orgId, anonymousIds) },
      rawTopic: Topics.eventsRaw,
      trustedProxies: [],
      upgradeUrl: 'https://example.test/billing',
      now: () => NOW,
    };
  }
}

const doubles = new Doubles();
let server: RunningHttpServer;
let url: string;

beforeAll(async () => {
  const logger = createLogger({ name: 'test', level: 'silent' });
  const metrics = createMetrics();
  const { app, router } = createApp({ logger, metrics, basePath: '/functions/v1', readiness: async () => ({ checks: {} }) });
  mountBatchRoute(router, { ...doubles.deps(), metrics: gatewayMetrics(metrics), logger });
  server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  url = `${server.url}/functions/v1/v1-batch`;
});
afterAll(() => server.close());
beforeEach(() => doubles.reset());

const event = (n: number, extra: Record<string, unknown> = {}) => ({
  type: 'track',
  event: 'Clicked',
  messageId: `m-${n}`,
  anonymousId: `anon-${n}`,
  timestamp: '2026-11-21T11:59:00.000Z',
  ...extra,
});

async function post(body: unknown, headers: Record<string, string> = {}, method = 'POST') {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${WRITE}`, ...headers },
    body: method === 'POST' ? (typeof body === 'string' ? body : JSON.stringify(body)) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

describe('POST /v1-batch: request-level outcomes', () => {
  const cases: Array<[string, () => Promise<Awaited<ReturnType<typeof post>>>, number, Record<string, unknown>]> = [
    ['no Authorization', () => post({ batch: [] }, { authorization: '' }), 401, { success: false, error: Messages.missingAuthorization }],
    ['not Bearer', () => post({ batch: [] }, { authorization: `Token ${WRITE}` }), 401, { success: false, error: Messages.invalidAuthorizationFormat }],
    ['empty key', () => post({ batch: [] }, { authorization: 'Bearer ' }), 401, { success: false, error: Messages.emptyApiKey }],
    ['unknown key', () => post({ batch: [] }, { authorization: `Bearer uk_live_${'x'.repeat(40)}` }), 401, { success: false, error: Messages.invalidApiKey }],
    ['read key', () => post({ batch: [] }, { authorization: `Bearer ${READ}` }), 403, { success: false, error: 'Insufficient permissions: this operation requires a write or admin key' }],
    ['verification throws', async () => { doubles.keyError = new Error('db down'); return post({ batch: [] }); }, 500, { success: false, error: Messages.authenticationFailed }],
    ['IP not allowed', async () => { doubles.keys.set(WRITE, verifiedKey({ ipAllowlist: ['10.0.0.0/8'] })); return post({ batch: [] }); }, 403, { success: false, code: ErrorCodes.ipNotAllowed }],
    ['Origin not allowed', async () => { doubles.keys.set(WRITE, verifiedKey({ originAllowlist: ['https://shop.test'] })); return post({ batch: [] }, { origin: 'https://evil.test' }); }, 403, { success: false, code: ErrorCodes.originNotAllowed }],
    ['text/plain', () => post({ batch: [] }, { 'content-type': 'text/plain' }), 400, { success: false, error: Messages.contentTypeNotJson }],
    ['empty body', () => post(''), 400, { success: false, error: Messages.emptyBody }],
    ['invalid JSON', () => post('{"batch": ['), 400, { success: false, error: Messages.invalidJson }],
    ['no batch', () => post({ events: [] }), 400, { success: false, error: Messages.batchRequired }],
    ['batch not an array', () => post({ batch: {} }), 400, { success: false, error: Messages.batchRequired }],
    ['JSON array body', () => post([event(1)]), 400, { success: false, error: Messages.batchRequired }],
    ['101 events', () => post({ batch: Array.from({ length: 101 }, (_, i) => event(i)) }), 400, { success: false, error: Messages.batchTooLarge }],
    ['over 1 MiB', () => post({ batch: [event(1, { properties: { pad: 'x'.repeat(1_048_576) } })] }), 413, { success: false, error: Messages.bodyTooLarge(1_048_576), limit_bytes: 1_048_576, hint: BodyLimitHints.batch }],
    ['plan paused', async () => { doubles.keys.set(WRITE, verifiedKey({ planState: 'paused' })); return post({ batch: [] }); }, 429, { success: false, error: Messages.quotaPaused, upgrade_url: 'https://example.test/billing' }],
    ['plan limit reached', async () => { doubles.keys.set(WRITE, verifiedKey({ planState: 'limit_reached' })); return post({ batch: [] }); }, 429, { success: false, error: Messages.monthlyLimitReached }],
    ['monthly quota used up', async () => { doubles.keys.set(WRITE, verifiedKey({ monthlyEventQuota: 10 })); doubles.usage = 10; return post({ batch: [] }); }, 429, { success: false, error: Messages.monthlyLimitReached }],
    ['usage store down', async () => { doubles.keys.set(WRITE, verifiedKey({ monthlyEventQuota: 10 })); doubles.usageError = new Error('timeout'); return post({ batch: [] }); }, 503, { success: false, error: Messages.usageCheckFailed }],
    ['log down', async () => { doubles.busDown = true; return post({ batch: [event(1)] }); }, 503, { success: false, error: Messages.serviceUnavailable }],
  ];
  it.each(cases)('%s', async (_name, send, status, body) => {
    const res = await send();
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject(body);
    expect(res.headers.get('api-version')).toBe('1');
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('answers the exact bodies and headers of each 429 and 503', async () => {
    doubles.keys.set(WRITE, verifiedKey({ planState: 'paused' }));
    const paused = await post({ batch: [] });
    expect(paused.headers.get('retry-after')).toBe('86400');
    expect(paused.body).toEqual({ success: false, error: Messages.quotaPaused, upgrade_url: 'https://example.test/billing' });

    doubles.keys.set(WRITE, verifiedKey({ planState: 'limit_reached' }));
    const monthly = await post({ batch: [] });
    expect(monthly.headers.get('retry-after')).toBeNull();
    expect(monthly.body).toEqual({ success: false, error: Messages.monthlyLimitReached });

    doubles.keys.set(WRITE, verifiedKey({ monthlyEventQuota: 5 }));
    doubles.usageError = new Error('x');
    const usage = await post({ batch: [] });
    expect(usage.headers.get('retry-after')).toBe('30');
    expect(usage.body).toEqual({ success: false, error: Messages.usageCheckFailed });

    doubles.usageError = undefined;
    doubles.busDown = true;
    const down = await post({ batch: [event(1)] });
    expect(down.headers.get('retry-after')).toBe('30');
    expect(JSON.stringify(down.body)).not.toContain('unreachable');

    // A visitor whose key cannot be read or made (the database is down): nothing is written that could never be opened.
    doubles.busDown = false;
    doubles.subjectKeys.down = true;
    const noKey = await post({ batch: [event(2)] });
    expect(noKey.status).toBe(503);
    expect(noKey.headers.get('retry-after')).toBe('30');
    expect(noKey.body).toEqual({ success: false, error: Messages.serviceUnavailable });
    expect(doubles.produceCalls).toBe(0);
  });

  it.each(['GET', 'PUT', 'PATCH', 'DELETE'])('%s → 405 with the envelope', async (method) => {
    const res = await post(undefined, {}, method);
    expect(res.status).toBe(405);
    expect(res.body).toEqual({ success: false, error: Messages.methodNotAllowed });
  });

  it('answers the CORS preflight', async () => {
    const res = await fetch(url, { method: 'OPTIONS', headers: { origin: 'https://any.test', 'access-control-request-method': 'POST' } });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS');
    expect(res.headers.get('access-control-allow-headers')).toBe('Content-Type, Authorization, X-Request-ID');
  });

  it('checks in the spec order: authentication before the body, the body before limits', async () => {
    doubles.keys.set(WRITE, verifiedKey({ planState: 'paused' }));
    expect((await post('not json', { authorization: '' })).status).toBe(401);
    expect((await post('not json')).status).toBe(400);
    expect(doubles.hits.size).toBe(0);
    expect((await post({ batch: [] })).status).toBe(429);
  });
});

describe('POST /v1-batch: rate limits', () => {
  it('allows 100 requests per minute per (org, IP), then 429 rate_limited with the headers', async () => {
    for (let i = 0; i < 100; i++) expect((await post({ batch: [] })).status).toBe(200);
    const res = await post({ batch: [] });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ success: false, error: 'Rate limit exceeded: max 100 requests per minute per IP', code: 'rate_limited' });
    expect(res.headers.get('retry-after')).toBe('30');
    expect(res.headers.get('x-ratelimit-limit')).toBe('100');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('a key cap tightens the per-IP limit and never loosens it', async () => {
    doubles.keys.set(WRITE, verifiedKey({ ratePerMinuteCap: 3 }));
    for (let i = 0; i < 3; i++) expect((await post({ batch: [] })).status).toBe(200);
    const res = await post({ batch: [] });
    expect(res.body).toMatchObject({ error: 'Rate limit exceeded: max 3 requests per minute per IP', code: 'rate_limited' });
    doubles.reset();
    doubles.keys.set(WRITE, verifiedKey({ ratePerMinuteCap: 500 }));
    for (let i = 0; i < 100; i++) await post({ batch: [] });
    expect((await post({ batch: [] })).headers.get('x-ratelimit-limit')).toBe('100');
  });

  it('allows 2000 per organisation across IPs, then a 429 whose body has only error', async () => {
    doubles.hits.set('batch:org:6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f', 2000);
    const res = await post({ batch: [] });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ error: 'Rate limit exceeded: max 2000 requests per minute per org' });
    expect(res.headers.get('x-ratelimit-limit')).toBe('2000');
    expect(res.headers.get('retry-after')).toBe('30');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
  });
});

describe('POST /v1-batch: per-event outcomes', () => {
  it('accepts an empty batch', async () => {
    const res = await post({ batch: [] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, processed: 0, failed: 0, duration_ms: expect.any(Number) });
  });

  it('accepts a full batch into the log with its envelope and key', async () => {
    const res = await post({ batch: Array.from({ length: 100 }, (_, i) => event(i)) }, { 'x-request-id': 'req-42' });
    expect(res.body).toEqual({ success: true, processed: 100, failed: 0, duration_ms: expect.any(Number) });
    expect(doubles.produced).toHaveLength(100);
    expect(doubles.produced[7]).toMatchObject({
      key: `6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f:${doubles.subjectKeys.dataKeys.get('anon-7')!.id}`,
      value: {
        v: 1,
        orgId: '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f',
        requestId: 'req-42',
        receivedAt: NOW.toISOString(),
        clientIp: '127.0.0.1',
        event: { messageId: 'm-7', context: { ip_address: '127.0.0.1' } },
      },
    });
  });

  it('seals each event under its anonymous id\'s key: the log is given no identifier, address or property in clear', async () => {
    const batch = [
      event(0, { anonymousId: 'anon-ann', userId: 'user-ann', traits: { email: 'ann@example.com', phone: '+447700900123' }, type: 'identify' }),
      event(1, { anonymousId: 'anon-ann', properties: { plan: 'gold-plan' } }),
      event(2, { anonymousId: 'anon-bob', context: { page: { url: 'https://shop.test/checkout?u=bob' }, userAgent: 'Bob-Agent/1.0' } }),
    ];
    expect((await post({ batch }, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(200);
    const written = JSON.stringify(doubles.sealed);
    for (const clear of ['anon-ann', 'user-ann', 'ann@example.com', '+447700900123', 'gold-plan', 'anon-bob', 'shop.test', 'Bob-Agent', '127.0.0.1', 'm-0', 'identify']) {
      expect(written).not.toContain(clear);
    }
    const ann = doubles.subjectKeys.dataKeys.get('anon-ann')!.id;
    expect(doubles.sealed.map((m) => m.key)).toEqual([`${ORG}:${ann}`, `${ORG}:${ann}`, `${ORG}:${doubles.subjectKeys.dataKeys.get('anon-bob')!.id}`]);
    expect(doubles.sealed[0]!.value).toEqual({ v: 2, orgId: ORG, receivedAt: NOW.toISOString(), requestId: expect.any(String), keyId: ann, sealed: expect.any(String) });
    expect(doubles.produced[0]!.value.event).toMatchObject({ userId: 'user-ann', traits: { email: 'ann@example.com' } });
  });

  it('drops each bad event alone, lists at most ten, and counts them all', async () => {
    const batch = [
      event(0),
      ...Array.from({ length: 12 }, (_, i) => event(i + 1, { event: undefined })),
      event(13, { type: 'alias', userId: undefined }),
      { type: 'page', anonymousId: 'a', timestamp: NOW.toISOString() },
      null,
      event(16),
    ];
    const res = await post({ batch });
    expect(res.body).toMatchObject({ success: false, processed: 2, failed: 15 });
    expect(res.body.errors).toHaveLength(10);
    expect(res.body.errors[0]).toBe(`m-1: ${EventReasons.eventNameRequired}`);
    const tail = await post({ batch: [event(13, { type: 'alias' }), { type: 'page', anonymousId: 'a', timestamp: NOW.toISOString() }, null, event(3, { anonymousId: 'null' })] });
    expect(tail.body.errors).toEqual([
      `m-13: ${EventReasons.userIdRequiredForAlias}`,
      `batch[1]: ${EventReasons.messageIdRequired}`,
      `batch[2]: ${EventReasons.eventRequired}`,
      `m-3: ${EventReasons.invalidAnonymousId}`,
    ]);
  });

  it('reports a failed produce of one event as insert_failed and keeps the rest', async () => {
    doubles.produceFailsAt.add(1);
    const res = await post({ batch: [event(0), event(1), event(2)] });
    expect(res.body).toMatchObject({ success: false, processed: 2, failed: 1, errors: [`m-1: ${EventReasons.insertFailed}`] });
  });

  it('a call the log refuses as a whole costs only the event to blame: the others are produced alone and acknowledged', async () => {
    doubles.poison.add('m-1');
    const res = await post({ batch: [event(0), event(1), event(2)] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: false, processed: 2, failed: 1, errors: [`m-1: ${EventReasons.insertFailed}`] });
    expect(doubles.produced.map((m) => m.value.event.messageId)).toEqual(['m-0', 'm-2']);
    expect(doubles.produceCalls).toBe(4);
  });

  it('a refused call of one event is that event failed, not a 500', async () => {
    doubles.poison.add('m-0');
    const res = await post({ batch: [event(0)] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: false, processed: 0, failed: 1, errors: [`m-0: ${EventReasons.insertFailed}`] });
  });

  it('clamps a timestamp over 5 minutes in the future and keeps the original', async () => {
    const future = new Date(NOW.getTime() + 5 * 60_000 + 1000).toISOString();
    const nearFuture = new Date(NOW.getTime() + 4 * 60_000).toISOString();
    await post({ batch: [event(1, { timestamp: future }), event(2, { timestamp: nearFuture })] });
    expect(doubles.produced[0]!.value).toMatchObject({ originalTimestamp: future, event: { timestamp: NOW.toISOString() } });
    expect(doubles.produced[1]!.value.originalTimestamp).toBeUndefined();
    expect(doubles.produced[1]!.value.event.timestamp).toBe(nearFuture);
  });

  it('stores events that break the soft caps', async () => {
    const wide = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`k${i}`, i]));
    const res = await post({ batch: [event(1, { properties: wide, traits: { blob: 'z'.repeat(40_000) } })] });
    expect(res.body).toMatchObject({ success: true, processed: 1 });
  });

  it('removes a fingerprint without consent and keeps one with it', async () => {
    const fingerprint = { hash: 'h', components: {} };
    await post({ batch: [event(1, { context: { fingerprint } }), event(2, { context: { fingerprint, consent: { fingerprinting: true } } })] });
    expect(doubles.produced[0]!.value.event.context).not.toHaveProperty('fingerprint');
    expect(doubles.produced[1]!.value.event.context).toHaveProperty('fingerprint', fingerprint);
  });

  it('marks successful responses in a grace period, exposed to browsers', async () => {
    doubles.keys.set(WRITE, verifiedKey({ planState: 'grace' }));
    const res = await post({ batch: [event(1)] });
    expect(res.headers.get('x-svc-quota-status')).toBe('grace');
    expect(res.headers.get('access-control-expose-headers')).toContain('X-SVC-Quota-Status');
    const ok = await post({ batch: [event(1)] }, { authorization: `Bearer ${ADMIN}` });
    expect(ok.headers.get('x-svc-quota-status')).toBeNull();
  });
});
