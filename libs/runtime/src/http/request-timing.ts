import type { RequestHandler } from 'express';
import type { Metrics } from '../metrics';
import { OPERATIONAL_PATHS } from './health';
import { routeLabel, trackMatchedRoute } from './route-label';

/**
 * Observes `http_request_duration_seconds` and writes one access-log line per
 * request. Both use the matched route pattern, never the raw path, so neither the
 * label set nor the logs grow with ids in URLs (and query strings, which may hold
 * secrets, are never logged).
 */
export function requestTiming(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const startedAt = process.hrtime.bigint();
    trackMatchedRoute(req);
    let recorded = false;
    // 'finish' when the response was fully handed to the OS; 'close' alone when the
    // client went away first. Either way, record exactly once.
    const record = (): void => {
      if (recorded) return;
      recorded = true;
      const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
      const route = routeLabel(req);
      const status = String(res.statusCode);
      metrics.httpRequestDuration.observe({ method: req.method, route, status }, seconds);
      // Probes and scrapes arrive every few seconds; keep them out of info-level logs.
      const level = OPERATIONAL_PATHS.has(route) ? 'debug' : 'info';
      res.locals.log[level](
        {
          method: req.method,
          route,
          status: res.statusCode,
          durationMs: Math.round(seconds * 1000),
          // false: the client went away before the response was fully sent.
          completed: res.writableFinished,
        },
        'request completed',
      );
    };
    res.once('finish', record);
    res.once('close', record);
    next();
  };
}
