import type { Request } from 'express';
import { UNMATCHED_ROUTE } from '../metrics';

/**
 * The full matched route pattern of each request (e.g. `/functions/v1/v1-profiles/:id`),
 * recorded when the router dispatches to a route.
 *
 * Why not read `req.baseUrl + req.route.path` when the response finishes? When a
 * handler fails, the error leaves the (sub)router and express restores `req.baseUrl`
 * before the error handler runs, which loses the mount prefix. So `req.route` gets an
 * accessor that captures `baseUrl` at the moment the router assigns the route. If
 * express ever stops assigning it, the label falls back to `unmatched`, which is
 * still a bounded label.
 *
 * Caveat: `baseUrl` is the URL prefix actually matched, so a router mounted on a
 * parameterised path would put raw values into the label. Mount routers on static paths.
 */
const matchedRoutes = new WeakMap<Request, string>();

export function trackMatchedRoute(req: Request): void {
  let current: unknown = (req as { route?: unknown }).route;
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => current,
    set: (route: unknown) => {
      current = route;
      const pattern = routePattern(route);
      if (pattern !== undefined) matchedRoutes.set(req, joinPaths(req.baseUrl, pattern));
    },
  });
}

/** Forget the match: a route that passed the request on did not answer it. */
export function clearMatchedRoute(req: Request): void {
  matchedRoutes.delete(req);
}

/** The matched route pattern, or `unmatched`; never a raw path. */
export function routeLabel(req: Request): string {
  return matchedRoutes.get(req) ?? UNMATCHED_ROUTE;
}

function routePattern(route: unknown): string | undefined {
  if (typeof route !== 'object' || route === null || !('path' in route)) return undefined;
  const path: unknown = route.path;
  if (typeof path === 'string') return path;
  if (Array.isArray(path)) return path.map(String).join(',');
  if (path instanceof RegExp) return String(path);
  return undefined;
}

function joinPaths(base: string, path: string): string {
  if (base === '' || base === '/') return path;
  return path === '/' ? base : `${base}${path}`;
}
