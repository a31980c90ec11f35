/**
 * The fixture origin of the end-to-end suites, on 127.0.0.1: it serves the
 * pages and the bundle, and relays /functions/v1/* to the stack, so that a
 * page posting to its own origin reaches the real gateway. It records every
 * batch request and loses the ones a test chooses, the way a network does.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Where a chosen batch request is lost: before it reaches the stack, or after the stack has answered (its answer is lost). */
export type Loss = 'before the stack' | 'after the stack';

export interface RelayedBatch {
  messageIds: string[];
  /** Names of the events (track name, else type). */
  names: string[];
  /** The stack's answer as relayed; 0 when the page got none. */
  status: number;
  lost?: Loss;
  /** Sent by sendBeacon to the Segment-compatible route (the fallback where fetch has no keepalive). */
  beacon?: true;
}

const RELAYED_HEADERS = ['content-type', 'authorization', 'origin', 'x-request-id'];

export class FixtureRelay {
  readonly batches: RelayedBatch[] = [];
  private files = new Map<string, { type: string; body: string }>();
  private losses: Loss[] = [];
  private server: Server;
  origin = '';

  constructor(private readonly upstream: string) {
    // an answer the relay cannot give (the stack gone) is a network error for the page
    this.server = createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()));
  }

  async start(): Promise<this> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The apiHost a page uses to reach the stack through this relay. */
  get apiHost(): string {
    return `${this.origin}/functions/v1`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Serves `body` at `path` (HTML unless told). */
  serve(path: string, body: string, type = 'text/html; charset=utf-8'): void {
    this.files.set(path, { type, body });
  }

  /** Forgets the batches recorded and the losses not yet made. */
  reset(): void {
    this.batches.length = 0;
    this.losses = [];
  }

  /** Loses the next batch request, at `where`. */
  lose(where: Loss): void {
    this.losses.push(where);
  }

  /** Polls until `check` returns a truthy value. */
  async waitFor<T>(check: () => T | undefined | null | false | 0, what: string, timeoutMs = 15_000): Promise<T> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value) return value;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; batches: ${JSON.stringify(this.batches)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = (req.url ?? '/').split('?')[0] ?? '/';
    if (at.startsWith('/functions/v1/')) return this.relay(req, res, at);
    if (at === '/favicon.ico') {
      res.writeHead(204);
      res.end();
      return;
    }
    const file = req.method === 'GET' ? this.files.get(at) : undefined;
    if (!file) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': file.type, 'Cache-Control': 'no-store' });
    res.end(file.body);
  }

  private async relay(req: IncomingMessage, res: ServerResponse, at: string): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const beacon = at.endsWith('/segment/v1/batch');
    const batch = (at.endsWith('/v1-batch') || beacon) && req.method === 'POST' ? batchOf(body) : undefined;
    const lost = batch ? this.losses.shift() : undefined;
    const record: RelayedBatch | undefined = batch && { ...batch, status: 0, ...(lost ? { lost } : {}), ...(beacon ? { beacon: true as const } : {}) };
    if (record) this.batches.push(record);
    if (lost === 'before the stack') return cut(res);
    const headers: Record<string, string> = {};
    for (const name of RELAYED_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const answer = await fetch(`${this.upstream}${at}`, { method: req.method ?? 'GET', headers, ...(body.length ? { body } : {}) });
    const text = await answer.text();
    if (lost === 'after the stack') return cut(res);
    if (record) record.status = answer.status;
    res.writeHead(answer.status, { 'Content-Type': answer.headers.get('content-type') ?? 'application/json' });
    res.end(text);
  }
}

function batchOf(body: Buffer): Pick<RelayedBatch, 'messageIds' | 'names'> {
  let events: Array<{ messageId?: string; event?: string; type?: string }> = [];
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { batch?: unknown };
    if (Array.isArray(parsed.batch)) events = parsed.batch as typeof events;
  } catch {
    // not JSON: recorded with no events
  }
  return { messageIds: events.map((e) => String(e.messageId)), names: events.map((e) => String(e.event ?? e.type)) };
}

/**
 * Loses the answer: the status line goes out, then the connection closes
 * before the body, so the page sees a network error. (A reset before any byte
 * of an answer is not enough: Chromium silently re-sends a request whose reused
 * or preconnected connection closes before it answers.)
 */
function cut(res: ServerResponse): void {
  res.writeHead(502, { 'Content-Type': 'application/json', 'Content-Length': '2' });
  res.flushHeaders();
  res.socket?.end();
}
