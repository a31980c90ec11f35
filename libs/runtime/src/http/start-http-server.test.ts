import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http, { STATUS_CODES } from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Messages } from '@svc/contracts';
import { COMMON_HEADERS } from './common-headers';
import { startHttpServer } from './start-http-server';

/** A tiny app: `/slow` answers when the test says so, anything else at once. */
function slowApp(): { app: http.RequestListener; release: () => void; started: Promise<void> } {
  let release!: () => void;
  let markStarted!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const app: http.RequestListener = (req, res) => {
    if (req.url === '/slow') {
      markStarted();
      void released.then(() => res.end('slow done'));
      return;
    }
    res.end('fast');
  };
  return { app, release, started };
}

function get(url: string, agent?: http.Agent): Promise<{ status: number; body: string; connection?: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: agent ?? false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
      })
      .on('error', reject);
  });
}

describe('startHttpServer', () => {
  it('listens on the given host with a free port and reports its URL', async () => {
    const { app } = slowApp();
    const running = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
    try {
      expect(running.port).toBeGreaterThan(0);
      expect(running.url).toBe(`http://127.0.0.1:${running.port}`);
      expect(await get(`${running.url}/`)).toMatchObject({ status: 200, body: 'fast' });
    } finally {
      await running.close();
    }
  });

  it('sets server timeouts', async () => {
    const running = await startHttpServer(slowApp().app, { host: '127.0.0.1', port: 0 });
    try {
      expect(running.server.headersTimeout).toBe(20_000);
      expect(running.server.requestTimeout).toBe(60_000);
      expect(running.server.keepAliveTimeout).toBe(65_000);
    } finally {
      await running.close();
    }
  });

  it('rejects when the port is taken', async () => {
    const first = await startHttpServer(slowApp().app, { host: '127.0.0.1', port: 0 });
    try {
      await expect(startHttpServer(slowApp().app, { host: '127.0.0.1', port: first.port })).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await first.close();
    }
  });

  it('close() waits for in-flight requests, refuses new connections, and is idempotent', async () => {
    const { app, release, started } = slowApp();
    const running = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
    const inFlight = get(`${running.url}/slow`);
    await started;

    const closing = running.close();
    expect(running.close()).toBe(closing);
    await expect(get(`${running.url}/`)).rejects.toThrow(/ECONNREFUSED/);

    let closed = false;
    void closing.then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(closed).toBe(false);

    release();
    expect(await inFlight).toMatchObject({ status: 200, body: 'slow done', connection: 'close' });
    await closing;
  });

  it('close() does not wait for idle keep-alive connections', async () => {
    const running = await startHttpServer(slowApp().app, { host: '127.0.0.1', port: 0 });
    const agent = new http.Agent({ keepAlive: true });
    try {
      await get(`${running.url}/`, agent);
      const startedAt = Date.now();
      await running.close();
      expect(Date.now() - startedAt).toBeLessThan(1_000);
    } finally {
      agent.destroy();
    }
  });

  it('close() cuts off requests still running after the shutdown timeout', async () => {
    const { app, started } = slowApp();
    const running = await startHttpServer(app, { host: '127.0.0.1', port: 0, shutdownTimeoutMs: 200 });
    const inFlight = get(`${running.url}/slow`);
    await started;
    const startedAt = Date.now();
    await running.close();
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(150);
    await expect(inFlight).rejects.toThrow(/socket hang up|ECONNRESET/);
  });
});

describe('startHttpServer with TLS', () => {
  let dir: string;
  let cert: string;
  let key: string;

  beforeAll(() => {
    // A throwaway self-signed certificate, made here so no key material lives in the repo.
    dir = mkdtempSync(join(tmpdir(), 'runtime-tls-'));
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
        '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
      { stdio: 'ignore' },
    );
    cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
    key = readFileSync(join(dir, 'key.pem'), 'utf8');
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves HTTPS', async () => {
    const running = await startHttpServer(slowApp().app, { host: '127.0.0.1', port: 0, tls: { cert, key } });
    try {
      expect(running.url).toBe(`https://127.0.0.1:${running.port}`);
      const body = await new Promise<string>((resolve, reject) => {
        https
          .get(`${running.url}/`, { ca: cert, agent: false }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () => resolve(text));
          })
          .on('error', reject);
      });
      expect(body).toBe('fast');
    } finally {
      await running.close();
    }
  });
});

describe('startHttpServer: requests the HTTP parser refuses still get the envelope and the common headers', () => {
  let server: Awaited<ReturnType<typeof startHttpServer>>;
  beforeAll(async () => {
    server = await startHttpServer(slowApp().app, { host: '127.0.0.1', port: 0 });
  });
  afterAll(() => server.close());

  /** Writes bytes no HTTP client would, and reads until the server closes. */
  const raw = (bytes: Buffer): Promise<string> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      const socket = connect({ host: '127.0.0.1', port: server.port }, () => socket.end(bytes));
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('error', reject);
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });

  it.each([
    ['a request line over 16 KiB', Buffer.from(`GET /${'s'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`), 431, Messages.headersTooLarge],
    ['a control byte in the request line', Buffer.concat([Buffer.from('GET /a'), Buffer.from([0x01]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]), 400, Messages.malformedRequest],
    ['no HTTP at all', Buffer.from('\x16\x03\x01 hello\r\n\r\n'), 400, Messages.malformedRequest],
  ])('%s', async (_name, bytes, status, message) => {
    const answer = await raw(bytes);
    const [head = '', body] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe(`HTTP/1.1 ${status} ${STATUS_CODES[status]}`);
    expect(JSON.parse(body ?? '')).toEqual({ success: false, error: message });
    expect(head).toMatch(/\r\nX-Request-ID: [0-9a-f-]{36}\r\n/);
    for (const [name, value] of Object.entries(COMMON_HEADERS)) expect(head).toContain(`\r\n${name}: ${value}`);
  });
});
