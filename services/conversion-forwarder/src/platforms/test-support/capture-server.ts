import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP server on 127.0.0.1 standing in for an ad platform in tests: it
 * records every request and answers from a script, so a client's exact wire
 * format and its handling of each answer are both checked.
 */

export interface CapturedRequest {
  method: string;
  /** Path and query string, as the client sent them. */
  path: string;
  /** Lower-cased names, as Node reports them. */
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** JSON and form bodies parsed (a form as a flat object); anything else is rawBody. */
  body: unknown;
}

export interface ScriptedResponse {
  status: number;
  /** An object is sent as JSON, a string as is; a function answers from the request (to echo it, say). */
  body?: unknown;
  headers?: Record<string, string>;
  /** Answer only after this long (for timeouts). */
  delayMs?: number;
}

export interface CaptureServer {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  requests: CapturedRequest[];
  /** Queues answers, used one per request in order; once the queue is empty every request gets the fallback. */
  respondWith(responses: ScriptedResponse[]): void;
  close(): Promise<void>;
}

export interface CaptureServerOptions {
  /** Answer when nothing is queued; default 200 `{}`. */
  fallback?: ScriptedResponse;
}

export async function startCaptureServer(options: CaptureServerOptions = {}): Promise<CaptureServer> {
  const requests: CapturedRequest[] = [];
  const queue: ScriptedResponse[] = [];
  const fallback = options.fallback ?? { status: 200, body: {} };
  const pendingAnswers = new Set<NodeJS.Timeout>();

  const server = createServer((req, res) => {
    void readBody(req).then((rawBody) => {
      const captured: CapturedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawBody,
        body: parseBody(rawBody, req.headers['content-type']),
      };
      requests.push(captured);
      const scripted = queue.shift() ?? fallback;
      if (!scripted.delayMs) return answer(res, scripted, captured);
      const timer = setTimeout(() => {
        pendingAnswers.delete(timer);
        answer(res, scripted, captured);
      }, scripted.delayMs);
      pendingAnswers.add(timer);
    }, () => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    respondWith(responses) {
      queue.push(...responses);
    },
    async close() {
      for (const timer of pendingAnswers) clearTimeout(timer);
      // fetch keeps connections alive; without this close() would wait for them to idle out.
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

/** A URL nothing listens on: a port that was just bound and released. */
export async function closedPortUrl(): Promise<string> {
  const server = await startCaptureServer();
  await server.close();
  return server.url;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseBody(rawBody: string, contentType: string | undefined): unknown {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  if (type === 'application/json') {
    try {
      return JSON.parse(rawBody) as unknown;
    } catch {
      return rawBody;
    }
  }
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(rawBody));
  return rawBody;
}

function answer(res: ServerResponse, scripted: ScriptedResponse, request: CapturedRequest): void {
  const body: unknown = typeof scripted.body === 'function' ? (scripted.body as (r: CapturedRequest) => unknown)(request) : scripted.body;
  const isText = typeof body === 'string';
  const payload = body === undefined ? '' : isText ? body : JSON.stringify(body);
  res.writeHead(scripted.status, {
    ...(body === undefined ? {} : { 'Content-Type': isText ? 'text/plain; charset=utf-8' : 'application/json' }),
    ...scripted.headers,
  });
  res.end(payload);
}
