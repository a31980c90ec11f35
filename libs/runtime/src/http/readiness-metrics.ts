import { Gauge, type Registry } from 'prom-client';
import type { CheckStatus } from './health';

const VALUE: Record<CheckStatus, number> = { ok: 1, degraded: 0.5, fail: 0 };

/**
 * `readiness_ready` (1 ready, 0 not) and `readiness_check_status{check}`
 * (1 ok, 0.5 degraded, 0 fail) as of the last /readyz probe, so flapping
 * readiness shows on a dashboard and can page (changes() over a window).
 */
export function readinessGauges(registry: Registry): (checks: Record<string, CheckStatus>, ready: boolean) => void {
  // Apps sharing a registry share the gauges.
  const ready =
    (registry.getSingleMetric('readiness_ready') as Gauge | undefined) ??
    new Gauge({ name: 'readiness_ready', help: 'Whether the last /readyz probe answered ready (1) or not (0).', registers: [registry] });
  const check =
    (registry.getSingleMetric('readiness_check_status') as Gauge<'check'> | undefined) ??
    new Gauge({
      name: 'readiness_check_status',
      help: 'Each readiness check as of the last /readyz probe: 1 ok, 0.5 degraded, 0 fail.',
      labelNames: ['check'],
      registers: [registry],
    });
  return (checks, isReady) => {
    ready.set(isReady ? 1 : 0);
    for (const [name, status] of Object.entries(checks)) check.set({ check: name }, VALUE[status]);
  };
}
