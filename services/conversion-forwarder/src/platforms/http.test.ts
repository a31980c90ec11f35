import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { outcomeByStatus, parseRetryAfter, post, type PlatformResponse } from './http';
import { startCaptureServer, type CaptureServer } from './test-support/capture-server';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-03-14T10:00:00Z');
  it.each<[string | null, number | undefined]>([
    [null, undefined],
    ['0', 0],
    ['30', 30_000],
    [' 7 ', 7_000],
    ['Sat, 14 Mar 2026 10:01:30 GMT', 90_000],
    ['Sat, 14 Mar 2026 09:00:00 GMT', 0],
    ['soon', undefined],
    ['-5', undefined],
  ])('%p → %p', (header, expected) => {
    expect(parseRetryAfter(header, now)).toBe(expected);
  });
});

describe('outcomeByStatus', () => {
  it.each<[PlatformResponse, unknown]>([
    [{ status: 200, body: {} }, { kind: 'sent', status: 200 }],
    [{ status: 204, body: '' }, { kind: 'sent', status: 204 }],
    [{ status: 500, body: '' }, { kind: 'retry', status: 500, error: 'why' }],
    [{ status: 503, body: '', retryAfterMs: 5_000 }, { kind: 'retry', status: 503, error: 'why', retryAfterMs: 5_000 }],
    [{ status: 429, body: '', retryAfterMs: 1_000 }, { kind: 'retry', status: 429, error: 'why', retryAfterMs: 1_000 }],
    [{ status: 400, body: '' }, { kind: 'failed', status: 400, error: 'why', clickUnusable: false }],
    [{ status: 404, body: '' }, { kind: 'failed', status: 404, error: 'why', clickUnusable: false }],
    [{ status: 301, body: '' }, { kind: 'failed', status: 301, error: 'why', clickUnusable: false }],
  ])('%p', (response, expected) => {
    expect(outcomeByStatus(response, 'why')).toEqual(expected);
  });
});

describe('post', () => {
  let server: CaptureServer;
  beforeEach(async () => {
    server = await startCaptureServer();
  });
  afterEach(async () => {
    await server.close();
  });

  it('does not follow a redirect, so a body with credentials is never replayed elsewhere', async () => {
    server.respondWith([{ status: 307, headers: { Location: `${server.url}/elsewhere` } }]);
    const result = await post(`${server.url}/events`, { headers: {}, body: 'access_token=x' }, { fetch, timeoutMs: 1_000 });
    expect(result).toEqual({ kind: 'response', response: { status: 307, body: '' } });
    expect(server.requests.map((r) => r.path)).toEqual(['/events']);
  });

  it('returns a non-JSON body as text and reads Retry-After', async () => {
    server.respondWith([{ status: 503, body: 'down for maintenance', headers: { 'Retry-After': '12' } }]);
    const result = await post(server.url, { headers: {}, body: '' }, { fetch, timeoutMs: 1_000 });
    expect(result).toEqual({ kind: 'response', response: { status: 503, body: 'down for maintenance', retryAfterMs: 12_000 } });
  });
});
