import { describe, expect, it } from '@jest/globals';
import { Messages } from '@svc/contracts';
import type { Request, Response } from 'express';
import { requireHttps } from './require-https';
import { startTestApp, BASE_PATH } from './test-support';
import { sendJson } from './json-response';

describe('requireHttps', () => {
  const cases: Array<[string, string[], Record<string, string>, number]> = [
    ['plain HTTP straight to us', [], {}, 403],
    ['plain HTTP claiming https, from an untrusted peer', [], { 'x-forwarded-proto': 'https' }, 403],
    ['trusted proxy that terminated TLS', ['127.0.0.1'], { 'x-forwarded-proto': 'https' }, 200],
    ['trusted proxy, list of protos', ['127.0.0.0/8'], { 'x-forwarded-proto': 'HTTPS, http' }, 200],
    ['trusted proxy that got plain HTTP', ['127.0.0.1'], { 'x-forwarded-proto': 'http' }, 403],
  ];
  it.each(cases)('%s', async (_name, trusted, headers, status) => {
    const app = await startTestApp((router) => {
      router.use(requireHttps(trusted));
      router.get('/ping', (_req, res) => sendJson(res, 200, { ok: true }));
    });
    try {
      const res = await fetch(`${app.url}${BASE_PATH}/ping`, { headers });
      expect(res.status).toBe(status);
      if (status === 403) {
        expect(await res.json()).toEqual({ success: false, error: Messages.httpsRequired, code: 'https_required' });
      }
    } finally {
      await app.close();
    }
  });

  it('lets through a request that arrived on our own TLS listener', () => {
    let passed: unknown = 'not called';
    const req = { socket: { encrypted: true }, headers: {} } as unknown as Request;
    requireHttps([])(req, {} as Response, (err?: unknown) => (passed = err));
    expect(passed).toBeUndefined();
  });
});
