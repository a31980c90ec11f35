import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { answerClientError } from './client-error';

export interface HttpTimeouts {
  /** Time to receive a request's headers (slowloris guard). Default 20 s. */
  headersMs?: number;
  /** Time to receive a whole request, body included (a 1 MiB batch on a slow link). Default 60 s. */
  requestMs?: number;
  /**
   * Idle keep-alive. Default 65 s: above the 60 s idle timeout of common load
   * balancers, so the balancer, not us, closes idle connections and never sends a
   * request on a socket we are closing.
   */
  keepAliveMs?: number;
}

export interface StartHttpServerOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** Serve HTTPS (PEM cert chain and key) instead of plain HTTP. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  timeouts?: HttpTimeouts;
  /** How long `close()` waits for in-flight requests before cutting them off. Default 10 s. */
  shutdownTimeoutMs?: number;
}

export interface RunningHttpServer {
  server: http.Server | https.Server;
  /** e.g. `http://127.0.0.1:53211`. */
  url: string;
  port: number;
  /** Graceful stop; idempotent (every call returns the same promise). */
  close(): Promise<void>;
}

export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;
/** How often, while draining, connections that just went idle are closed. */
const DRAIN_POLL_MS = 50;

export async function startHttpServer(
  app: http.RequestListener,
  options: StartHttpServerOptions,
): Promise<RunningHttpServer> {
  const serverOptions: http.ServerOptions = {
    headersTimeout: options.timeouts?.headersMs ?? 20_000,
    requestTimeout: options.timeouts?.requestMs ?? 60_000,
    // Enforce the two timeouts above within seconds rather than node's default 30 s sweep.
    connectionsCheckingInterval: 2_000,
  };
  const server = options.tls
    ? https.createServer({ ...serverOptions, cert: options.tls.cert, key: options.tls.key }, app)
    : http.createServer(serverOptions, app);
  server.keepAliveTimeout = options.timeouts?.keepAliveMs ?? 65_000;
  server.on('clientError', answerClientError);

  let closing: Promise<void> | undefined;
  // Runs before the app: once draining, responses tell keep-alive clients to
  // reconnect elsewhere instead of reusing this connection.
  server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (closing) res.setHeader('Connection', 'close');
  });

  await listen(server, options.host, options.port);
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `${options.tls ? 'https' : 'http'}://${host}:${port}`;
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;

  return {
    server,
    url,
    port,
    close: () => (closing ??= drainAndClose(server, shutdownTimeoutMs)),
  };
}

function listen(server: http.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen({ host, port }, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/**
 * Stop accepting, close idle keep-alive sockets (again and again, as in-flight
 * requests finish and their sockets go idle), and after `timeoutMs` destroy
 * whatever is still open. Resolves once every connection is gone.
 */
async function drainAndClose(server: http.Server, timeoutMs: number): Promise<void> {
  const closed = new Promise<void>((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
  });
  server.closeIdleConnections();
  const poll = setInterval(() => server.closeIdleConnections(), DRAIN_POLL_MS);
  const deadline = setTimeout(() => server.closeAllConnections(), timeoutMs);
  try {
    await closed;
  } finally {
    clearInterval(poll);
    clearTimeout(deadline);
  }
}
