import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { Headers } from '@svc/contracts';
import type { Logger } from '../logging';

declare global {
  // Declaration merging into express's own namespace is the only way to type
  // `res.locals`; there is no module-scoped alternative.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      /** The request's id, as sent back in X-Request-ID. */
      requestId: string;
      /** Logger bound to this request (`requestId` on every line). */
      log: Logger;
    }
  }
}

/**
 * Spec: the caller's X-Request-ID is echoed only when it is 1..200 characters of
 * `[A-Za-z0-9._-]`; anything else (including duplicated headers, which node joins
 * with ", ") gets a server-minted UUID, so ids are always safe to log and echo.
 */
const VALID_REQUEST_ID = /^[A-Za-z0-9._-]{1,200}$/;

export function isValidRequestId(value: unknown): value is string {
  return typeof value === 'string' && VALID_REQUEST_ID.test(value);
}

/** First middleware: every later log line and every response carries the id. */
export function requestId(logger: Logger): RequestHandler {
  const headerName = Headers.requestId.toLowerCase();
  return (req, res, next) => {
    const incoming = req.headers[headerName];
    const id = isValidRequestId(incoming) ? incoming : randomUUID();
    res.locals.requestId = id;
    res.locals.log = logger.child({ requestId: id });
    res.setHeader(Headers.requestId, id);
    next();
  };
}
