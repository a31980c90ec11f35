import type { RequestHandler } from 'express';
import { API_VERSION, Headers } from '@svc/contracts';
import { CORS_EXPOSED_HEADERS } from './cors';

/** The headers the spec puts on every response, whoever answers: the app, or the server for a request the app never saw. */
export const COMMON_HEADERS: Readonly<Record<string, string>> = {
  [Headers.apiVersion]: API_VERSION,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': CORS_EXPOSED_HEADERS,
};

/**
 * Headers the spec puts on every response. Set before routing so they survive
 * every exit path: 404, 405, 413, 500 and preflights alike.
 */
export function commonHeaders(): RequestHandler {
  return (_req, res, next) => {
    for (const [name, value] of Object.entries(COMMON_HEADERS)) res.setHeader(name, value);
    next();
  };
}
