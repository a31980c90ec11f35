/**
 * An origin on 127.0.0.1 for the suites that drive a real browser: it serves
 * the pages and scripts a test gives it, and its subclass answers the rest
 * (the API the pages post to: captured and scripted, or relayed to a stack).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export abstract class FixtureOrigin {
  origin = '';
  private readonly server: Server;
  private readonly files = new Map<string, { type: string; body: string }>();

  constructor() {
    // an answer the origin cannot give (an upstream gone) is a network error for the page
    this.server = createServer((req, res) => void this.handle(req, res, (req.url ?? '/').split('?')[0] ?? '/').catch(() => res.destroy()));
  }

  /** Answers a request for `path` (its query left out); servePage answers what is not the subclass's. */
  protected abstract handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>;

  /** What the batch requests so far were, for the message of a wait that timed out. */
  protected abstract batchesSeen(): unknown;

  async start(): Promise<this> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The apiHost a page uses to post to this origin. */
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

  /** Polls until `check` returns a truthy value. */
  async waitFor<T>(check: () => T | undefined | null | false | 0 | '', what: string, timeoutMs = 15_000): Promise<T> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value) return value as T;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; batches: ${JSON.stringify(this.batchesSeen())}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The page served at `path` on a GET, else a 404. */
  protected servePage(req: IncomingMessage, res: ServerResponse, path: string): void {
    const file = req.method === 'GET' ? this.files.get(path) : undefined;
    if (!file) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': file.type, 'Cache-Control': 'no-store' });
    res.end(file.body);
  }
}

/**
 * Loses the answer: the status line goes out, then the connection closes
 * before the body, so the page sees a network error. (A reset before any byte
 * of an answer is not enough: Chromium silently re-sends a request whose reused
 * or preconnected connection closes before it answers.)
 */
export function loseAnswer(res: ServerResponse): void {
  res.writeHead(502, { 'Content-Type': 'application/json', 'Content-Length': '2' });
  res.flushHeaders();
  res.socket?.end();
}

/** The request's body, read to its end. */
export async function requestBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
