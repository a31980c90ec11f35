/**
 * Every metric a dashboard or an alert rule names (infra/observability) is
 * exported by some service: each service is started as its own process from
 * its built entry point, as the compose stack and the Helm chart run them, on
 * both bus tiers, and its /metrics is scraped. A dashboard panel or alert on
 * a metric nobody exports would show nothing and never fire; this fails
 * instead.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { runMigrations } from '@svc/runtime';
import { createTestDatabase, describeWithKafka, describeWithPostgres, kafkaEnv, type TestDatabase } from '@svc/testkit';
import { allMigrations } from '../migrations';
import { DEPLOYED_SERVICES, startServiceProcesses, type ServiceProcess } from '../test-support/service-processes';
import { DASHBOARDS_DIR, RULES_FILE, dashboardExpressions, exportedNames, ruleExpressions, unexportedMetrics } from '../test-support/observability-files';

function scrapeSuite(tier: 'postgres-log' | 'kafka'): void {
  let database: TestDatabase;
  let services: ServiceProcess[] = [];
  beforeAll(async () => {
    database = await createTestDatabase();
    await runMigrations(database.db, allMigrations);
    const env: Record<string, string> = {
      DATABASE_URL: database.url,
      ...(tier === 'kafka' ? { ...kafkaEnv(), TOPIC_PREFIX: `scrape${randomBytes(4).toString('hex')}.` } : {}),
    };
    services = await startServiceProcesses(DEPLOYED_SERVICES.map((service) => ({ service, env })));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await database?.drop();
  }, 60_000);

  it('every metric of every dashboard and alert is exported by a service', async () => {
    const exported = new Set<string>();
    for (const s of services) {
      // Readiness is probed first, as a kubelet would: its gauges then hold a value.
      await fetch(`${s.origin}/readyz`);
      const res = await fetch(`${s.origin}/metrics`);
      expect(res.status).toBe(200);
      for (const name of exportedNames(await res.text())) exported.add(name);
    }
    const expressions = [...readdirSync(DASHBOARDS_DIR).flatMap((f) => dashboardExpressions(path.join(DASHBOARDS_DIR, f))), ...ruleExpressions(RULES_FILE)];
    expect(expressions.length).toBeGreaterThan(20);
    expect(await unexportedMetrics(expressions, exported)).toEqual([]);
  });
}

describeWithPostgres('dashboards and alerts name only exported metrics, Postgres-backed log', () => scrapeSuite('postgres-log'));
describeWithKafka('dashboards and alerts name only exported metrics, Kafka', () => scrapeSuite('kafka'));
