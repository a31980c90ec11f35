import { Router } from 'express';
import type { Registry } from 'prom-client';
import type { Logger } from '../logging';
import { sendJson } from './json-response';
import { readinessGauges } from './readiness-metrics';

/** `degraded`: working, but something needs an operator's eye (ready all the same: taking it out of rotation would not help). */
export type CheckStatus = 'ok' | 'degraded' | 'fail';

/** What a check resolves to when it is degraded rather than ok. */
export const DEGRADED = 'degraded';

/** Outcome of each named dependency check; ready unless a check is `fail`. */
export interface ReadinessReport {
  checks: Record<string, CheckStatus>;
}

export type ReadinessProbe = () => Promise<ReadinessReport>;

export interface HealthRoutesOptions {
  registry: Registry;
  /** What /metrics serves (default: the registry's metrics). */
  render?: () => Promise<string>;
  readiness: ReadinessProbe;
  logger: Logger;
  /** A probe slower than this counts as not ready. Default 5000 ms. */
  readinessTimeoutMs?: number;
}

export const DEFAULT_READINESS_TIMEOUT_MS = 5_000;

/** Root paths of the operational endpoints (probes and scrapes, not API traffic). */
export const OPERATIONAL_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Operational endpoints at the root, outside the API's base path:
 * `/healthz` (liveness: the process serves HTTP; never checks dependencies, so a
 * database outage does not get every pod restarted), `/readyz` (dependencies, for
 * load-balancer rotation) and `/metrics` (Prometheus text format).
 */
export function healthRoutes(options: HealthRoutesOptions): Router {
  const timeoutMs = options.readinessTimeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS;
  const router = Router();
  const recordReadiness = readinessGauges(options.registry);
  router.get('/healthz', (_req, res) => {
    sendJson(res, 200, { status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    let checks: Record<string, CheckStatus> = {};
    let ready = false;
    try {
      checks = (await withTimeout(options.readiness(), timeoutMs)).checks;
      ready = Object.values(checks).every((status) => status !== 'fail');
    } catch (err) {
      (res.locals.log ?? options.logger).warn({ err }, 'readiness probe failed');
    }
    recordReadiness(checks, ready);
    sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready', checks });
  });
  router.get('/metrics', async (_req, res) => {
    const text = await (options.render ?? (() => options.registry.metrics()))();
    res.status(200).set('Content-Type', options.registry.contentType).send(text);
  });
  return router;
}

/**
 * Builds a ReadinessProbe from named checks: each resolves (ok; `DEGRADED` for
 * degraded) or rejects (fail) and runs concurrently under its own timeout. Failure details go to the log, not
 * into the response, which is reachable without authentication.
 */
export function readinessFromChecks(
  checks: Record<string, () => Promise<unknown>>,
  options: { timeoutMs?: number; logger?: Logger } = {},
): ReadinessProbe {
  const timeoutMs = options.timeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS;
  return async () => {
    const entries = await Promise.all(
      Object.entries(checks).map(async ([name, check]): Promise<[string, CheckStatus]> => {
        try {
          return [name, (await withTimeout(check(), timeoutMs)) === DEGRADED ? 'degraded' : 'ok'];
        } catch (err) {
          options.logger?.warn({ err, check: name }, 'readiness check failed');
          return [name, 'fail'];
        }
      }),
    );
    return { checks: Object.fromEntries(entries) };
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
