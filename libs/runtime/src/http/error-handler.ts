import type { IncomingMessage } from 'node:http';
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { BodyLimitHints, Headers, Limits, Messages } from '@svc/contracts';
import { isDatabaseUnavailable } from '../db/unavailable';
import { UnavailableError } from '../errors';
import type { Logger } from '../logging';
import { declaredContentLength, payloadTooLarge, stopReading } from './body-limit';
import { HttpError } from './http-error';
import { sendJson } from './json-response';
import { clearMatchedRoute } from './route-label';

/** Last route: anything no router answered is a JSON 404, never express's HTML page. */
export function notFound(): RequestHandler {
  return (req, _res, next) => {
    // A route may have matched and passed the request on; the answer is still "no route".
    clearMatchedRoute(req);
    next(new HttpError(404, Messages.notFound));
  };
}

/**
 * For `router.all(path, methodNotAllowed(['POST']))` after a path's real routes:
 * 405 with an `Allow` header. OPTIONS is always listed (the CORS preflight answers
 * it), and HEAD whenever GET is (express serves HEAD from GET routes).
 */
export function methodNotAllowed(allowed: readonly string[]): RequestHandler {
  const methods = new Set(allowed.map((method) => method.toUpperCase()));
  if (methods.has('GET')) methods.add('HEAD');
  methods.add('OPTIONS');
  const allow = [...methods].join(', ');
  return (_req, _res, next) => {
    next(new HttpError(405, Messages.methodNotAllowed, { headers: { Allow: allow } }));
  };
}

/**
 * Translates a service's own error types (e.g. a domain "unavailable" error → 503)
 * into HttpErrors; return undefined for anything it does not recognise.
 */
export type ErrorMapper = (err: unknown) => HttpError | undefined;

/**
 * Renders every failure as the spec's envelope. HttpErrors show their own
 * message; anything else is logged with the request id and answered with a bare
 * `Internal server error`, so driver, framework or stack text never reaches a
 * client.
 */
export function errorHandler(logger: Logger, mapError?: ErrorMapper): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const log = res.locals.log ?? logger;
    if (res.headersSent) {
      // Too late for an envelope; cutting the connection is the only honest signal.
      log.error({ err }, 'error after response headers were sent');
      res.destroy();
      return;
    }
    const known = err instanceof HttpError ? err : (mapError?.(err) ?? unavailableAs503(err) ?? fromFrameworkError(err));
    if (known === undefined) {
      log.error({ err }, 'unhandled error');
      sendJson(res, 500, { success: false, error: Messages.internalError });
      return;
    }
    if (known.status >= 500 || !known.expose) {
      log.error({ err }, 'request failed');
    } else {
      log.debug({ status: known.status, code: known.code, error: known.message }, 'request rejected');
    }
    // Any 413 means the rest of the body is unwanted: stop reading it. So does
    // any answer given before a large body was read (a refused key, a throttled
    // address): the client has its answer, and taking in up to a MiB more only
    // to discard it would let a flood of refused uploads cost what accepted
    // ones do. A small body is left to be drained, keeping the connection.
    if (!req.readableEnded && (known.status === 413 || unreadBodyIsLarge(req))) stopReading(req);
    writeHttpError(res, known);
  };
}

/** Bodies this size or larger are not drained after an early answer. */
const DRAIN_LIMIT_BYTES = 64 * 1024;

/** A body still to come that is large, or of unknown size (chunked). */
function unreadBodyIsLarge(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  return (declaredContentLength(req) ?? 0) >= DRAIN_LIMIT_BYTES;
}

function writeHttpError(res: Response, err: HttpError): void {
  for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  if (!err.expose) {
    sendJson(res, err.status >= 500 ? err.status : 500, { success: false, error: Messages.internalError });
    return;
  }
  const envelope = {
    ...(err.omitSuccessField ? {} : { success: false }),
    error: err.message,
    ...(err.code === undefined ? {} : { code: err.code }),
    ...err.body,
  };
  sendJson(res, err.status, envelope);
}

/**
 * The spec's transient-backend answer, for every service: the database
 * cannot serve us right now (connections refused or exhausted, shutting
 * down, a transaction that kept conflicting) → 503 with Retry-After. A
 * statement that does not fit the database stays a 500: that is a bug or a
 * missing migration, not a state that passes.
 */
function unavailableAs503(err: unknown): HttpError | undefined {
  if (!(err instanceof UnavailableError) && !isDatabaseUnavailable(err)) return undefined;
  return new HttpError(503, Messages.serviceUnavailable, {
    headers: { [Headers.retryAfter]: String(Limits.retryAfterUnavailableSeconds) },
    cause: err,
  });
}

/**
 * Errors raised by express itself or by a body-parser a service might mount,
 * translated to catalogue messages instead of their own text (which may echo input).
 */
function fromFrameworkError(err: unknown): HttpError | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { type, limit, status } = err as { type?: unknown; limit?: unknown; status?: unknown };
  switch (type) {
    case 'entity.too.large':
      return typeof limit === 'number' ? payloadTooLarge(limit, BodyLimitHints.generic) : undefined;
    case 'entity.parse.failed':
    case 'request.aborted':
    case 'request.size.invalid':
      return new HttpError(400, Messages.invalidJson);
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return new HttpError(400, Messages.contentTypeNotJson);
  }
  // The router could not percent-decode a route parameter (e.g. `/v1-profiles/%E0`):
  // no resource can have that id, so it is a plain 404.
  if (err instanceof URIError && status === 400) return new HttpError(404, Messages.notFound);
  return undefined;
}
