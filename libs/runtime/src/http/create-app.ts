import express, { type Express, type Router } from 'express';
import type { Logger } from '../logging';
import type { Metrics } from '../metrics';
import { commonHeaders } from './common-headers';
import { cors } from './cors';
import { errorHandler, notFound, type ErrorMapper } from './error-handler';
import { healthRoutes, type ReadinessProbe } from './health';
import { requestId } from './request-id';
import { requestTiming } from './request-timing';
import type { Tracer } from '@opentelemetry/api';

export interface CreateAppOptions {
  logger: Logger;
  metrics: Metrics;
  /** Where the service's routes live, e.g. `/functions/v1`. */
  basePath: string;
  /** Backs `GET /readyz`. */
  readiness: ReadinessProbe;
  readinessTimeoutMs?: number;
  /** Maps the service's own error types to HttpErrors; unmapped errors become a bare 500. */
  mapError?: ErrorMapper;
  /** Records every request as a span (tracing on). */
  tracer?: Tracer;
}

export interface ServiceApp {
  app: Express;
  /** Mounted at `basePath`; services add their routes here (before or after listening). */
  router: Router;
}

/**
 * The express app every service runs. Order matters:
 * request id → common headers → CORS (answers preflights) → timing → routes
 * (root `/healthz`, `/readyz`, `/metrics`, then `router` at `basePath`) →
 * JSON 404 → error envelope. No body parser runs here: handlers read bodies with
 * `readJsonBody` after authentication.
 */
export function createApp(options: CreateAppOptions): ServiceApp {
  const app = express();
  // No framework fingerprinting; no ETag/304 on dynamic JSON (every response has a body).
  app.disable('x-powered-by');
  app.disable('etag');

  app.use(requestId(options.logger));
  app.use(commonHeaders());
  app.use(cors());
  app.use(requestTiming(options.metrics, options.tracer));

  app.use(
    healthRoutes({
      registry: options.metrics.registry,
      render: options.metrics.render,
      readiness: options.readiness,
      logger: options.logger,
      readinessTimeoutMs: options.readinessTimeoutMs,
    }),
  );
  const router = express.Router();
  app.use(normaliseBasePath(options.basePath), router);

  app.use(notFound());
  app.use(errorHandler(options.logger, options.mapError));
  return { app, router };
}

/** `functions/v1/` → `/functions/v1`; empty → `/`. */
function normaliseBasePath(basePath: string): string {
  const trimmed = basePath.replace(/^\/+|\/+$/g, '');
  return `/${trimmed}`;
}
