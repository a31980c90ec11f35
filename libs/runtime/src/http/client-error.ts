import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { Headers, Messages } from '@svc/contracts';
import { COMMON_HEADERS } from './common-headers';
import { JSON_CONTENT_TYPE } from './json-response';

/**
 * Node's HTTP parser refuses some requests before the app sees them: a
 * request line or headers over 16 KiB, bytes no request line may hold, a
 * client too slow to send its headers. Node's own answer is a bare
 * `400 Bad Request` with no body; this one is the spec's envelope with the
 * headers every response carries (a fresh X-Request-ID: the request's own
 * was never read).
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, Messages.headersTooLarge]
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, Messages.requestTimeout]
        : [400, Messages.malformedRequest];
  const body = JSON.stringify({ success: false, error: message });
  const headers = {
    'Content-Type': JSON_CONTENT_TYPE,
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
    [Headers.requestId]: randomUUID(),
    ...COMMON_HEADERS,
  };
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body}`);
}
