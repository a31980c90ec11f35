import { SpanKind, SpanStatusCode, type Span, type Tracer } from '@opentelemetry/api';
import type { Request, RequestHandler } from 'express';
import type { Metrics } from '../metrics';
import { TRACEPARENT_HEADER, parentContext } from '../tracing/tracing';
import { OPERATIONAL_PATHS } from './health';
import { routeLabel, trackMatchedRoute } from './route-label';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      /** The request's span when tracing is on (a child of the caller's traceparent, if it sent one). */
      span?: Span;
    }
  }
}

/**
 * Observes `http_request_duration_seconds` and writes one access-log line per
 * request, and with a tracer, records the request as a server span. All use
 * the matched route pattern, never the raw path, so neither the label set,
 * the logs nor the spans carry ids from URLs (and query strings, which may
 * hold secrets, are never logged).
 */
export function requestTiming(metrics: Metrics, tracer?: Tracer): RequestHandler {
  return (req, res, next) => {
    const startedAt = process.hrtime.bigint();
    trackMatchedRoute(req);
    const span = tracer && requestSpan(tracer, req);
    if (span) res.locals.span = span;
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
      if (span) endRequestSpan(span, req.method, route, res.statusCode, res.writableFinished);
    };
    res.once('finish', record);
    res.once('close', record);
    next();
  };
}

function requestSpan(tracer: Tracer, req: Request): Span {
  const traceparent = req.headers[TRACEPARENT_HEADER];
  return tracer.startSpan(req.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } }, parentContext(typeof traceparent === 'string' ? traceparent : undefined));
}

function endRequestSpan(span: Span, method: string, route: string, status: number, completed: boolean): void {
  span.updateName(`${method} ${route}`);
  span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
  if (status >= 500 || !completed) span.setStatus({ code: SpanStatusCode.ERROR, ...(completed ? {} : { message: 'the client went away before the response was sent' }) });
  span.end();
}
