import type { Response } from 'express';

/** The exact Content-Type of every JSON body this service sends. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Sends `body` as JSON with the exact Content-Type, overriding any type a handler
 * may have set before failing (express's `res.json` keeps an existing one).
 */
export function sendJson(res: Response, status: number, body: unknown): void {
  res.status(status).set('Content-Type', JSON_CONTENT_TYPE).send(JSON.stringify(body));
}
