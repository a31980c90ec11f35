import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEGRADED, readinessFromChecks } from './health';
import { rawRequest, startTestApp, type TestApp } from './test-support';

/** What /readyz answered, as /metrics shows it afterwards: [case, the checks, readiness_ready, each check's value]. */
const CASES: Array<[string, Record<string, () => Promise<unknown>>, number, Record<string, number>]> = [
  ['all ok', { database: async () => 1 }, 1, { database: 1 }],
  ['one degraded: still ready', { database: async () => 1, resolving: async () => DEGRADED }, 1, { database: 1, resolving: 0.5 }],
  ['one failing: not ready', { database: async () => Promise.reject(new Error('down')) }, 0, { database: 0 }],
];

describe('readiness gauges', () => {
  describe.each(CASES)('%s', (_name, checks, ready, values) => {
    let app: TestApp;
    beforeAll(async () => {
      app = await startTestApp(() => {}, { readiness: readinessFromChecks(checks) });
    });
    afterAll(async () => app.close());

    it('holds what the last probe answered', async () => {
      await rawRequest(app.port, { path: '/readyz' });
      const metrics = (await rawRequest(app.port, { path: '/metrics' })).text;
      expect(metrics).toContain(`\nreadiness_ready ${ready}\n`);
      for (const [check, value] of Object.entries(values)) expect(metrics).toContain(`readiness_check_status{check="${check}"} ${value}\n`);
    });
  });
});
