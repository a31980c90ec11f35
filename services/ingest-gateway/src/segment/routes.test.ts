import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ErrorCodes, Limits, Messages, Topics, type RawEventEnvelope, type RawEventSealed } from '@svc/contracts';
import type { OutgoingMessage, ProduceResult } from '@svc/bus';
import { createApp, createLogger, createMetrics, startHttpServer, type RunningHttpServer } from '@svc/runtime';
import { FailedAuthThrottle, InProcessRateLimiter, type RateLimitRule, type VerifiedKey } from '@svc/accounts';
import { verifiedKey } from '@svc/testkit';
import { mountSegmentRoutes } from './routes';
import { batchRateRules } from '../limits';
import { gatewayMetrics } from '../metrics';
import { SubjectKeysDouble } from '../test-support/subject-keys-double';

/**
 * The Segment-compatible routes against doubles of the gateway's ports: how
 * they take the key and the body, and that they hand the events to the
 * /v1-batch pipeline. The pipeline's own rules are batch-route.test.ts's;
 * real clients drive these routes on the real stack in services/standalone.
 */
const WRITE = 'uk_live_' + 'w'.repeat(40);
const READ = 'uk_read_' + 'r'.repeat(40);
const NOW = new Date('2026-11-21T12:00:30.000Z');
const key = (type: VerifiedKey['type']): VerifiedKey => verifiedKey({ keyId: `key-${type}`, type });
const KEYS = new Map([[WRITE, key('write')], [READ, key('read')]]);

/** What the log was given, opened. */
let produced: Array<OutgoingMessage<RawEventEnvelope>> = [];
const subjectKeys = new SubjectKeysDouble();
let hits = new Map<string, number>();
let server: RunningHttpServer;

beforeAll(async () => {
  const logger = createLogger({ name: 'test', level: 'silent' });
  const metrics = createMetrics({ collectDefaultMetrics: false });
  const { app, router } = createApp({ logger, metrics, basePath: '/functions/v1', readiness: async () => ({ checks: {} }) });
  mountSegmentRoutes(router, {
    failedAuth: new FailedAuthThrottle(1_000_000),
    keys: { verifyApiKey: async (k) => KEYS.get(k) },
    rateLimiter: {
      hit: async (rules: readonly RateLimitRule[]) =>
        rules.map((rule) => {
          const n = (hits.get(rule.bucket) ?? 0) + 1;
          hits.set(rule.bucket, n);
          return { rule, hits: n, allowed: n <= rule.limit, remaining: Math.max(0, rule.limit - n), retryAfterSeconds: 30 };
        }),
    },
    fallbackRateLimiter: new InProcessRateLimiter(),
    readUsage: async () => 0,
    bus: {
      produce: async <T>(_topic: unknown, messages: readonly OutgoingMessage<T>[]): Promise<ProduceResult[]> => {
        for (const m of messages) produced.push({ key: m.key, value: subjectKeys.open(m.value as RawEventSealed) });
        return messages.map(() => ({ ok: true }));
      },
    },
    subjectKeys,
    rawTopic: Topics.eventsRaw,
    trustedProxies: [],
    upgradeUrl: 'https://example.test/billing',
    metrics: gatewayMetrics(metrics),
    logger,
    now: () => NOW,
  });
  server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
});
afterAll(async () => server?.close());
beforeEach(() => {
  produced = [];
  hits = new Map();
});

const basic = (k: string) => `Basic ${Buffer.from(`${k}:`).toString('base64')}`;
const track = (extra: Record<string, unknown> = {}) => ({ type: 'track', event: 'Signed Up', messageId: `m-${Math.random()}`, userId: 'u-1', timestamp: '2026-11-21T12:00:00.000Z', ...extra });

async function post(path: string, body: string | Buffer, headers: Record<string, string>): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${server.url}/functions/v1/segment/v1/${path}`, { method: 'POST', headers, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}
const json = (value: unknown) => JSON.stringify(value);

/** Posts a body announced as `announced` bytes of which only `sent` go out: an answer can only come from its start. */
function postStart(path: string, sent: string, announced: number): Promise<{ status: number; body: Record<string, unknown> }> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, method: 'POST', path: `/functions/v1/segment/v1/${path}`, headers: { 'content-type': 'text/plain', 'content-length': announced } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.write(sent);
    setTimeout(() => reject(new Error('no answer within 5 s: the rest of the body was waited for')), 5_000).unref();
  });
}

describe('a key the body names first (the browser library\'s beacon)', () => {
  const start = (key: string) => `{"writeKey":"${key}","batch":[${json(track())},${' '.repeat(4096)}`;

  it('is checked from the first bytes: an unknown one is refused before the rest of a 1 MiB body arrives', async () => {
    expect(await postStart('batch', start(`uk_live_${'u'.repeat(40)}`), Limits.batchBodyBytes)).toMatchObject({ status: 401, body: { error: Messages.invalidApiKey } });
    expect(await postStart('batch', start(READ), Limits.batchBodyBytes)).toMatchObject({ status: 403 });
    expect(produced).toEqual([]);
  });

  it.each([
    ['shorter than the part looked at', ''],
    ['longer: checked first, then the rest read', ' '.repeat(64 * 1024)],
  ])('a known one, in a body %s: the batch is stored', async (_name, padding) => {
    const res = await post('batch', `{"writeKey":"${WRITE}","batch":[${json(track())}${padding}]}`, { 'Content-Type': 'text/plain' });
    expect(res).toMatchObject({ status: 200, body: { success: true, processed: 1 } });
  });

  it('a body naming writeKey twice is refused unless both name the checked key (JSON keeps the last)', async () => {
    const res = await post('batch', `{"writeKey":"${WRITE}","batch":[${json(track())}],"writeKey":"uk_live_${'o'.repeat(40)}"}`, { 'Content-Type': 'text/plain' });
    expect(res).toMatchObject({ status: 401, body: { error: Messages.invalidApiKey } });
    expect(produced).toEqual([]);
  });
});

describe('Segment-compatible routes', () => {
  it.each(['track', 'identify', 'page', 'screen', 'alias', 'group'])('/v1/%s takes one event and stores it with the route’s type', async (type) => {
    const res = await post(type, json({ ...track({ type: 'whatever', groupId: 'g-1' }) }), { Authorization: basic(WRITE), 'Content-Type': 'application/json' });
    expect(res).toMatchObject({ status: 200, body: { success: true, processed: 1, failed: 0 } });
    expect(produced[0]?.value.event).toMatchObject({ type, anonymousId: 'user:u-1' });
  });

  it('/v1/batch takes the batch and answers as /v1-batch does, naming a bad event', async () => {
    const res = await post('batch', json({ batch: [track({ messageId: 'good' }), { type: 'track', messageId: 'bad', userId: 'u-1' }], sentAt: NOW.toISOString() }), { Authorization: basic(WRITE), 'Content-Type': 'application/json' });
    expect(res).toMatchObject({ status: 200, body: { success: false, processed: 1, failed: 1, errors: [`bad: ${'event name is required for track events'}`] } });
    expect(produced.map((m) => m.key)).toEqual([`6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f:${subjectKeys.dataKeys.get('user:u-1')!.id}`]);
  });

  it('takes the write key from the body, with any Content-Type (sendBeacon sends text/plain), and stores no key', async () => {
    const res = await post('track', json({ ...track(), writeKey: WRITE }), { 'Content-Type': 'text/plain;charset=UTF-8' });
    expect(res).toMatchObject({ status: 200, body: { success: true, processed: 1 } });
    expect(JSON.stringify(produced[0]?.value)).not.toContain(WRITE);
  });

  it('decompresses a gzip body (RudderStack’s default)', async () => {
    const res = await post('batch', gzipSync(json({ batch: [track(), track()] })), { Authorization: basic(WRITE), 'Content-Encoding': 'gzip' });
    expect(res).toMatchObject({ status: 200, body: { success: true, processed: 2 } });
  });

  /** [case, route, body, headers, status, error message]. */
  const REFUSALS: Array<[string, string, () => string | Buffer, Record<string, string>, number, string]> = [
    ['no key anywhere', 'track', () => json(track()), {}, 401, Messages.writeKeyMissing],
    ['an unknown key', 'track', () => json(track()), { Authorization: basic('uk_live_' + 'x'.repeat(40)) }, 401, Messages.invalidApiKey],
    ['an unknown key in the body', 'track', () => json({ ...track(), writeKey: 'nope' }), {}, 401, Messages.invalidApiKey],
    ['a read key', 'batch', () => json({ batch: [] }), { Authorization: basic(READ) }, 403, Messages.insufficientPermissions('write or admin')],
    ['a gzip body that decompresses past 1 MiB', 'batch', () => gzipSync(Buffer.alloc(2 * 1024 * 1024, 0x20)), { Authorization: basic(WRITE), 'Content-Encoding': 'gzip' }, 413, Messages.bodyTooLarge(1_048_576)],
    ['gzip that is not', 'batch', () => json({ batch: [] }), { Authorization: basic(WRITE), 'Content-Encoding': 'gzip' }, 400, Messages.invalidGzipBody],
    ['another Content-Encoding', 'batch', () => json({ batch: [] }), { Authorization: basic(WRITE), 'Content-Encoding': 'br' }, 400, Messages.unsupportedContentEncoding],
    ['invalid JSON', 'batch', () => '{', { Authorization: basic(WRITE) }, 400, Messages.invalidJson],
    ['no batch array', 'batch', () => json({ events: [] }), { Authorization: basic(WRITE) }, 400, Messages.batchRequired],
    ['101 events', 'batch', () => json({ batch: Array.from({ length: 101 }, () => track()) }), { Authorization: basic(WRITE) }, 400, Messages.batchTooLarge],
    ['an array on a single-event route', 'identify', () => json([track()]), { Authorization: basic(WRITE) }, 400, Messages.singleEventRequired],
  ];
  it.each(REFUSALS)('%s', async (_name, path, body, headers, status, error) => {
    const res = await post(path, body(), headers);
    expect(res).toMatchObject({ status, body: { success: false, error } });
    expect(produced).toEqual([]);
  });

  it('shares the per-(org, IP) rate limit of /v1-batch', async () => {
    let last = { status: 0, body: {} as Record<string, unknown>, headers: new Headers() };
    for (let i = 0; i < 101; i++) last = await post('batch', json({ batch: [] }), { Authorization: basic(WRITE) });
    expect(last).toMatchObject({ status: 429, body: { code: ErrorCodes.rateLimited } });
    // The bucket /v1-batch counts in (batchRateRules), not one of the routes' own.
    expect([...hits.keys()].sort()).toEqual(batchRateRules(key('write'), '127.0.0.1').map((rule) => rule.bucket).sort());
  });

  it('answers 405 to other methods', async () => {
    const res = await fetch(`${server.url}/functions/v1/segment/v1/batch`, { method: 'GET' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST, OPTIONS');
  });
});
