import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startCaptureServer, type CaptureServer } from './capture-server';

describe('startCaptureServer', () => {
  let server: CaptureServer;
  beforeEach(async () => {
    server = await startCaptureServer({ fallback: { status: 202, body: { fallback: true } } });
  });
  afterEach(async () => {
    await server.close();
  });

  it('answers from the queue in order, then with the fallback', async () => {
    server.respondWith([
      { status: 500, body: 'first' },
      { status: 201, body: { second: true }, headers: { 'X-Extra': 'yes' } },
    ]);
    const answers = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/n/${i}`, { method: 'POST' });
      answers.push([res.status, res.headers.get('x-extra'), await res.text()]);
    }
    expect(answers).toEqual([
      [500, null, 'first'],
      [201, 'yes', '{"second":true}'],
      [202, null, '{"fallback":true}'],
    ]);
  });

  it('records method, path with query, headers and the parsed body', async () => {
    await fetch(`${server.url}/a?b=c`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Key': 'k' }, body: '{"x":1}' });
    await fetch(`${server.url}/form`, { method: 'PUT', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'a=1&b=two+words' });
    await fetch(`${server.url}/text`, { method: 'POST', body: 'plain' });
    expect(server.requests.map(({ method, path, body }) => ({ method, path, body }))).toEqual([
      { method: 'POST', path: '/a?b=c', body: { x: 1 } },
      { method: 'PUT', path: '/form', body: { a: '1', b: 'two words' } },
      { method: 'POST', path: '/text', body: 'plain' },
    ]);
    expect(server.requests[0]?.headers['x-key']).toBe('k');
    expect(server.requests[0]?.rawBody).toBe('{"x":1}');
  });
});
