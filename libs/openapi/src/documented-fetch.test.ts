import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { documentedFetch } from './documented-fetch';

/** A stand-in server whose /healthz answers whatever the test sets. */
let answer = '{"status":"ok"}';
const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(answer));
let origin = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('documentedFetch', () => {
  it('resolves to the answer, body still readable, when the document describes it', async () => {
    answer = '{"status":"ok"}';
    const res = await documentedFetch(`${origin}/healthz`);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('rejects an answer with a field the document does not name', async () => {
    answer = '{"status":"ok","uptime":3}';
    await expect(documentedFetch(`${origin}/healthz`)).rejects.toThrow('must NOT have additional properties (uptime)');
  });
});
