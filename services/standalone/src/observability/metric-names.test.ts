import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { DASHBOARDS_DIR, RULES_FILE, dashboardExpressions, exportedNames, metricNames, ruleExpressions, unexportedMetrics } from '../test-support/observability-files';

/** [expression, the metric names it selects]. */
const EXPRESSIONS: Array<[string, string[]]> = [
  ['sum(rate(gateway_events_accepted_total[5m]))', ['gateway_events_accepted_total']],
  ['histogram_quantile(0.95, sum by (le, route) (rate(http_request_duration_seconds_bucket{route!~"/healthz"}[5m])))', ['http_request_duration_seconds_bucket']],
  ['sum by (group) (max by (group, partition) (bus_consumer_lag)) > 1000 and sum(delta(bus_consumer_lag[10m])) > 0', ['bus_consumer_lag']],
  ['changes(readiness_ready[15m]) >= 4', ['readiness_ready']],
  ['a / on (job) group_left b', ['a', 'b']],
];

describe('metricNames', () => {
  it.each(EXPRESSIONS)('%s', async (expr, names) => {
    expect(await metricNames(expr)).toEqual({ names });
  });

  it('says when an expression does not parse', async () => {
    expect((await metricNames('sum(rate(x[5m])')).error).toMatch(/does not parse/);
  });
});

describe('unexportedMetrics', () => {
  const exported = exportedNames('# HELP h x\n# TYPE h histogram\nh_bucket{le="1"} 0\n# TYPE c_total counter\nc_total 1\n');

  it('reads names from # TYPE lines, with a histogram’s series', () => {
    expect([...exported].sort()).toEqual(['c_total', 'h', 'h_bucket', 'h_count', 'h_sum']);
  });

  it('names a dashboard or alert expression that selects a metric no service exports', async () => {
    expect(await unexportedMetrics([{ where: 'panel "p"', expr: 'rate(c_total[5m]) / rate(typo_total[5m])' }], exported)).toEqual(['panel "p": typo_total is exported by no service']);
    expect(await unexportedMetrics([{ where: 'panel "p"', expr: 'rate(h_count[5m])' }], exported)).toEqual([]);
  });
});

describe('the dashboards and alert rules', () => {
  const expressions = [
    ...readdirSync(DASHBOARDS_DIR).flatMap((f) => dashboardExpressions(path.join(DASHBOARDS_DIR, f))),
    ...ruleExpressions(RULES_FILE),
  ];

  it('all parse, and the scrape test has something to check', async () => {
    expect(expressions.length).toBeGreaterThan(20);
    const parsed = await Promise.all(expressions.map(async ({ where, expr }) => ({ where, error: (await metricNames(expr)).error })));
    expect(parsed.filter((p) => p.error !== undefined)).toEqual([]);
  });
});
