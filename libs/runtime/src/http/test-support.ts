/**
 * Helpers for this folder's tests: a real server on 127.0.0.1:0 and a raw
 * node:http client (needed for bodies without Content-Length, lying
 * Content-Length headers and uploads that keep going after the response).
 * Deliberately free of jest imports.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import { Writable } from 'node:stream';
import type { Router } from 'express';
import { createLogger, type Logger } from '../logging';
import { createMetrics, type Metrics } from '../metrics';
import { createApp, type CreateAppOptions } from './create-app';
import type { ReadinessReport } from './health';
import { startHttpServer, type RunningHttpServer } from './start-http-server';

export const BASE_PATH = '/functions/v1';

export interface TestApp {
  running: RunningHttpServer;
  url: string;
  port: number;
  router: Router;
  metrics: Metrics;
  /** Every JSON log line written so far. */
  logs: Array<Record<string, unknown>>;
  /** Server-side sockets, to inspect how much the server read. */
  sockets: Socket[];
  close(): Promise<void>;
}

export function memoryLogger(level: 'debug' | 'info' | 'silent' = 'debug'): {
  logger: Logger;
  logs: Array<Record<string, unknown>>;
} {
  const logs: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() !== '') logs.push(JSON.parse(line) as Record<string, unknown>);
      }
      callback();
    },
  });
  return { logger: createLogger({ name: 'test', level, destination }), logs };
}

export async function startTestApp(
  setup: (router: Router) => void,
  options: Partial<Pick<CreateAppOptions, 'readiness' | 'readinessTimeoutMs' | 'mapError'>> = {},
): Promise<TestApp> {
  const { logger, logs } = memoryLogger();
  const metrics = createMetrics({ collectDefaultMetrics: false });
  const readiness = options.readiness ?? ((): Promise<ReadinessReport> => Promise.resolve({ checks: {} }));
  const { app, router } = createApp({ ...options, logger, metrics, basePath: BASE_PATH, readiness });
  setup(router);
  const running = await startHttpServer(app, { host: '127.0.0.1', port: 0, shutdownTimeoutMs: 1_000 });
  const sockets: Socket[] = [];
  running.server.on('connection', (socket: Socket) => sockets.push(socket));
  return {
    running,
    url: running.url,
    port: running.port,
    router,
    metrics,
    logs,
    sockets,
    close: () => running.close(),
  };
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json(): unknown;
}

export interface RawRequestOptions {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  /** Written as-is; without a content-length header node sends it chunked. */
  body?: string | Buffer;
}

/** One request on a fresh connection (no keep-alive pooling between tests). */
export function rawRequest(port: number, options: RawRequestOptions): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path, headers: options.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve(toRawResponse(res, chunks)));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

export interface StreamingUploadResult {
  response: RawResponse;
  /** Body bytes the client had handed to its socket when the response arrived. */
  bytesWritten: number;
}

/**
 * Streams `chunkSize` chunks (chunked encoding, no Content-Length, unless headers
 * say otherwise) until `totalBytes` are sent or the server answers, like a client
 * that keeps uploading while the server has already given up on the body.
 */
export function streamingUpload(
  port: number,
  options: { path: string; headers?: Record<string, string>; chunkSize: number; totalBytes: number },
): Promise<StreamingUploadResult> {
  return new Promise((resolve, reject) => {
    let answered = false;
    let bytesWritten = 0;
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: options.path,
        headers: { 'content-type': 'application/json', ...options.headers },
        agent: false,
      },
      (res) => {
        answered = true;
        const writtenAtResponse = bytesWritten;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          req.destroy();
          resolve({ response: toRawResponse(res, chunks), bytesWritten: writtenAtResponse });
        });
        res.on('error', reject);
      },
    );
    // Writes racing the server's close (EPIPE / ECONNRESET) are expected once it answered.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    const chunk = Buffer.alloc(options.chunkSize, 0x20);
    const pump = (): void => {
      while (!answered && bytesWritten < options.totalBytes) {
        bytesWritten += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    pump();
  });
}

function toRawResponse(res: http.IncomingMessage, chunks: Buffer[]): RawResponse {
  const text = Buffer.concat(chunks).toString('utf8');
  return { status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) as unknown };
}

export function waitForClose(socket: Socket): Promise<void> {
  return socket.destroyed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()));
}
