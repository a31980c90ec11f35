import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestHandler } from 'express';
import { Messages } from '@svc/contracts';
import { HttpError } from './http-error';

/** The spec's structured 413: envelope plus `limit_bytes` and `hint`. */
export function payloadTooLarge(limitBytes: number, hint: string): HttpError {
  return new HttpError(413, Messages.bodyTooLarge(limitBytes), {
    body: { limit_bytes: limitBytes, hint },
  });
}

/**
 * Rejects from the Content-Length header alone, before anything (auth included)
 * touches the body: the spec checks the declared size first. Bodies without a
 * Content-Length (chunked) are checked while streaming by `readJsonBody`.
 */
export function rejectOversizedContentLength(limitBytes: number, hint: string): RequestHandler {
  return (req, _res, next) => {
    const declared = declaredContentLength(req);
    if (declared !== undefined && declared > limitBytes) {
      stopReading(req);
      next(payloadTooLarge(limitBytes, hint));
      return;
    }
    next();
  };
}

/** The Content-Length header as a number, or undefined when absent or unusable. */
export function declaredContentLength(req: IncomingMessage): number | undefined {
  const header = req.headers['content-length'];
  if (header === undefined || !/^\d+$/.test(header)) return undefined;
  return Number(header);
}

/**
 * How long a connection whose body we refused stays half-open after the response,
 * so a client that is still uploading gets to read our answer before the socket is
 * torn down.
 */
export const LINGER_MS = 2_000;

/**
 * Stop pulling the request body off the wire (nothing past the limit is read, let
 * alone buffered) and make the connection end with the coming response.
 *
 * - `Connection: close`: the unread rest of the body makes the connection unusable
 *   for another request.
 * - `read(0)` marks the request consumed; otherwise node "dumps" the request after
 *   the response, i.e. reads and discards the remaining body, however large.
 * - Linger: for `Connection: close` node calls `socket.destroySoon()` once the
 *   response is flushed. Destroying a socket with unread input makes the kernel send
 *   a RST, which can make the client lose the 413 it has not read yet. This socket's
 *   `destroySoon` instead half-closes (FIN after the response) and destroys after
 *   LINGER_MS, or sooner when the client closes. If node stops calling
 *   `destroySoon`, the override is simply unused.
 */
export function stopReading(req: IncomingMessage): void {
  const res = (req as { res?: { headersSent: boolean; setHeader(name: string, value: string): unknown } }).res;
  if (res && !res.headersSent) res.setHeader('Connection', 'close');
  req.unpipe();
  req.removeAllListeners('data');
  req.pause();
  if (!req.readableEnded) req.read(0);
  lingerOnClose(req.socket);
}

const lingering = new WeakSet<Socket>();

function lingerOnClose(socket: Socket): void {
  if (lingering.has(socket)) return;
  lingering.add(socket);
  socket.destroySoon = function lingeringDestroySoon(this: Socket): void {
    if (this.writable) this.end();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
  };
}
