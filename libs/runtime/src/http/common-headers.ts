import type { RequestHandler } from 'express';
import { API_VERSION, Headers } from '@svc/contracts';

/**
 * Headers the spec puts on every response. Set before routing so they survive
 * every exit path: 404, 405, 413, 500 and preflights alike.
 */
export function commonHeaders(): RequestHandler {
  return (_req, res, next) => {
    res.setHeader(Headers.apiVersion, API_VERSION);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    next();
  };
}
