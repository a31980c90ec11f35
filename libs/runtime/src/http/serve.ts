import { readFile } from 'node:fs/promises';
import type { Router } from 'express';
import type { Logger } from '../logging';
import type { Metrics } from '../metrics';
import type { Tracing } from '../tracing/tracing';
import { createApp } from './create-app';
import type { ReadinessProbe } from './health';
import { requireHttps } from './require-https';
import { startHttpServer, type RunningHttpServer } from './start-http-server';

/** The parsed `httpServiceConfigSpec` fields a server needs. */
export interface HttpServiceConfig {
  HOST: string;
  PORT: number;
  TRUSTED_PROXIES: readonly string[];
  TLS_CERT_FILE: string | undefined;
  TLS_KEY_FILE: string | undefined;
  REQUIRE_HTTPS: boolean;
}

export interface ServeOptions {
  config: HttpServiceConfig;
  logger: Logger;
  metrics: Metrics;
  readiness: ReadinessProbe;
  /** Adds the service's routes under /functions/v1. */
  mount(router: Router): void;
  /** Every request a span, when tracing is on. */
  tracing?: Tracing;
}

/**
 * Builds the app, applies the HTTPS policy to the API routes (health and
 * metrics stay reachable by plain-HTTP probes), and listens; over TLS when a
 * certificate and key are configured.
 */
export async function serveHttp({ config, logger, metrics, readiness, mount, tracing }: ServeOptions): Promise<RunningHttpServer> {
  if (Boolean(config.TLS_CERT_FILE) !== Boolean(config.TLS_KEY_FILE)) {
    throw new Error('TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  }
  const tls =
    config.TLS_CERT_FILE && config.TLS_KEY_FILE
      ? { cert: await readFile(config.TLS_CERT_FILE), key: await readFile(config.TLS_KEY_FILE) }
      : undefined;
  const tracer = tracing?.enabled ? tracing.tracer('http') : undefined;
  const { app, router } = createApp({ logger, metrics, basePath: '/functions/v1', readiness, ...(tracer ? { tracer } : {}) });
  if (config.REQUIRE_HTTPS) router.use(requireHttps(config.TRUSTED_PROXIES));
  mount(router);
  return startHttpServer(app, { host: config.HOST, port: config.PORT, ...(tls ? { tls } : {}) });
}
