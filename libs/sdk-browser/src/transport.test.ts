import { describe, expect, it } from '@jest/globals';
import type { RequestInitLike, WindowLike } from './dom';
import { backoffDelay, postJSON } from './transport';

const win = (status: number | Error, body = '', headers: Record<string, string> = {}): WindowLike & { calls: Array<[string, RequestInitLike]> } => {
  const calls: Array<[string, RequestInitLike]> = [];
  return {
    calls,
    addEventListener: () => undefined,
    setTimeout: () => 0,
    clearTimeout: () => undefined,
    fetch: async (url, init) => {
      calls.push([url, init]);
      if (status instanceof Error) throw status;
      return { status, text: async () => body, headers: { get: (n) => headers[n] ?? null } };
    },
  };
};

describe('postJSON', () => {
  it('sends JSON with the write key, keepalive when asked, no credentials', async () => {
    const w = win(200, '{"success":true,"processed":1,"failed":0}', { 'X-SVC-Quota-Status': 'grace' });
    expect(await postJSON(w, 'https://h/v1-batch', 'uk_live_k', '{"batch":[]}', true)).toEqual({
      ok: true,
      status: 200,
      body: { success: true, processed: 1, failed: 0 },
      quota: 'grace',
    });
    expect(w.calls[0]).toEqual([
      'https://h/v1-batch',
      { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer uk_live_k' }, body: '{"batch":[]}', keepalive: true, credentials: 'omit' },
    ]);
  });

  it('treats every 4xx, 429 included, as permanent', async () => {
    for (const status of [400, 401, 403, 413, 429]) {
      const outcome = await postJSON(win(status, '{"success":false,"error":"nope"}'), 'u', 'k', '{}', false);
      expect(outcome).toEqual({ ok: false, retry: false, status, message: 'nope', body: { success: false, error: 'nope' } });
    }
  });

  it('retries 5xx and network errors', async () => {
    expect(await postJSON(win(503, 'not json'), 'u', 'k', '{}', false)).toMatchObject({ ok: false, retry: true, status: 503, message: 'HTTP 503' });
    expect(await postJSON(win(500), 'u', 'k', '{}', false)).toMatchObject({ retry: true });
    expect(await postJSON(win(new TypeError('Failed to fetch')), 'u', 'k', '{}', false)).toMatchObject({ ok: false, retry: true, status: 0, message: 'network error: Failed to fetch' });
  });
});

describe('backoffDelay', () => {
  it('doubles from 1 s up to 30 s with equal jitter', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((a) => backoffDelay(a, () => 1))).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    expect([1, 2, 6].map((a) => backoffDelay(a, () => 0))).toEqual([500, 1000, 15000]);
  });
});
