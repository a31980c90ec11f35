import type { TLSSocket } from 'node:tls';
import type { RequestHandler } from 'express';
import { Messages } from '@svc/contracts';
import { HttpError } from './http-error';
import { isTrustedPeer } from './client-ip';

/**
 * In production the API is served only over HTTPS. A request counts as HTTPS
 * when it arrived on our own TLS listener, or through a trusted proxy that says
 * so in X-Forwarded-Proto; anything else is refused before authentication, so
 * a key is never accepted after crossing the network in clear text.
 */
export function requireHttps(trustedProxies: readonly string[]): RequestHandler {
  return (req, _res, next) => {
    if ((req.socket as TLSSocket).encrypted) return next();
    const proto = String(req.headers['x-forwarded-proto'] ?? '')
      .split(',')[0]
      ?.trim()
      .toLowerCase();
    if (proto === 'https' && isTrustedPeer(req, trustedProxies)) return next();
    next(new HttpError(403, Messages.httpsRequired, { code: 'https_required' }));
  };
}
