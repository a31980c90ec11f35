/**
 * A tiny HTTP server on 127.0.0.1 for the browser tests: it serves the
 * script-tag build and HTML fixture pages, and captures what the library sends
 * to /functions/v1/v1-batch and /functions/v1/v1-consent, answering with
 * scripted replies or dropping the request.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Captured {
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body. */
  body: Record<string, unknown>;
  bytes: number;
  /** Status the server answered with; 0 when the request was dropped. */
  status: number;
  at: number;
}

export interface ScriptedReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A batch request the network loses: the client sees a network error. */
export const DROP = 'drop';

type Event = Record<string, unknown> & { messageId: string; type: string; event?: string; context: Record<string, unknown> };

export class CaptureServer {
  readonly batches: Captured[] = [];
  readonly consents: Captured[] = [];
  private pages = new Map<string, { type: string; body: string }>();
  private script: Array<ScriptedReply | typeof DROP> = [];
  /** Answer used once the script runs out; default 200 with a success body. */
  fallback: ScriptedReply | undefined;
  private server: Server;
  origin = '';

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handle(req.method ?? 'GET', (req.url ?? '/').split('?')[0] ?? '/', req.headers, Buffer.concat(chunks), res));
    });
  }

  async start(): Promise<this> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  get apiHost(): string {
    return `${this.origin}/functions/v1`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Serves `body` at `path` (HTML unless told). */
  serve(path: string, body: string, type = 'text/html; charset=utf-8'): void {
    this.pages.set(path, { type, body });
  }

  /** Replies to use, in order, for the next batch requests. */
  reply(...replies: Array<ScriptedReply | typeof DROP>): void {
    this.script.push(...replies);
  }

  reset(): void {
    this.batches.length = 0;
    this.consents.length = 0;
    this.script = [];
    this.fallback = undefined;
  }

  /** Every event of every batch request, answered or not, in arrival order. */
  events(filter?: (e: Event) => boolean): Event[] {
    const all = this.batches.flatMap((b) => (Array.isArray(b.body.batch) ? (b.body.batch as Event[]) : []));
    return filter ? all.filter(filter) : all;
  }

  /** Events of batch requests answered with 2xx. */
  delivered(filter?: (e: Event) => boolean): Event[] {
    const all = this.batches.filter((b) => b.status >= 200 && b.status < 300).flatMap((b) => (Array.isArray(b.body.batch) ? (b.body.batch as Event[]) : []));
    return filter ? all.filter(filter) : all;
  }

  /** Polls until `check` returns a truthy value. */
  async waitFor<T>(check: () => T | undefined | null | false | 0 | '', what: string, timeoutMs = 15_000): Promise<T> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value) return value as T;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; batches: ${JSON.stringify(this.batches.map((b) => [b.status, this.idsOf(b)]))}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Loses the answer: the status line goes out, then the connection closes
   * before the body, so the client sees a network error. (A reset before any
   * byte of an answer is not enough: Chromium silently re-sends a request whose
   * reused or preconnected connection closes before it answers.)
   */
  private cut(res: ServerResponse): void {
    res.writeHead(502, { 'Content-Type': 'application/json', 'Content-Length': '2' });
    res.flushHeaders();
    res.socket?.end();
  }

  private idsOf(b: Captured): unknown {
    return Array.isArray(b.body.batch) ? (b.body.batch as Event[]).map((e) => e.event ?? e.type) : b.body;
  }

  private handle(method: string, path: string, headers: IncomingHttpHeaders, raw: Buffer, res: ServerResponse): void {
    if (method === 'POST' && (path === '/functions/v1/v1-batch' || path === '/functions/v1/v1-consent')) {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        body = { unparsable: raw.toString('utf8') };
      }
      const isBatch = path.endsWith('v1-batch');
      const count = Array.isArray(body.batch) ? body.batch.length : 0;
      const reply = (isBatch ? this.script.shift() : undefined) ??
        this.fallback ?? { status: 200, body: isBatch ? { success: true, processed: count, failed: 0, duration_ms: 1 } : { success: true } };
      const status = reply === DROP ? 0 : reply.status;
      (isBatch ? this.batches : this.consents).push({ path, headers, body, bytes: raw.length, status, at: Date.now() });
      if (reply === DROP) return this.cut(res);
      res.writeHead(reply.status, { 'Content-Type': 'application/json', ...reply.headers });
      res.end(JSON.stringify(reply.body ?? { success: reply.status < 300 }));
      return;
    }
    const page = method === 'GET' ? this.pages.get(path) : undefined;
    if (!page) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': page.type, 'Cache-Control': 'no-store' });
    res.end(page.body);
  }
}
