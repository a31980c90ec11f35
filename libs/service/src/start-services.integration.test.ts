import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { busMigrations } from '@svc/bus';
import { loadConfig } from '@svc/runtime';
import { createTestDatabase, describeWithPostgres, testLogger, type TestDatabase } from '@svc/testkit';
import { serviceConfigSpec } from './config';
import type { ServiceDefinition } from './definition';
import { startServices } from './start-services';

describeWithPostgres('startServices: several services in one process', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  /** Start-up work every service asks for (as each reads the process's keys): counted, to show it is done once. */
  let readKeys = 0;
  const readTheKeys = async (dataDir: string | undefined) => ({ dataDir, read: ++readKeys });

  /** A service that answers its name on /<name>, has a readiness check named after it, and a stop step. */
  const service = (name: string, seen: Record<string, unknown>, ownPoolMax?: number): ServiceDefinition => ({
    name,
    configSpec: {},
    ...(ownPoolMax === undefined ? {} : { ownPoolMax: () => ownPoolMax }),
    async build({ config, db, bus, lifecycle, dataDir, once }) {
      await db.raw('select 1');
      seen[name] = { poolMax: config.DB_POOL_MAX, db, bus, dataDir, keys: await once(readTheKeys, dataDir) };
      lifecycle.registerFirst(`${name}-worker`, () => undefined);
      return {
        mount: (router) => router.get(`/${name}`, (_req, res) => res.json({ name })),
        readiness: { [name]: async () => 'ok' },
      };
    },
  });

  it('builds each listed definition with the process’s parts, serves them on one server, and stops them in reverse', async () => {
    const seen: Record<string, { poolMax: number; db: unknown; bus: unknown; dataDir: string | undefined; keys: unknown }> = {};
    const config = loadConfig(serviceConfigSpec, { DATABASE_URL: t.url, PORT: '0', LOG_LEVEL: 'silent' });
    const running = await startServices([service('first', seen), service('second', seen, 3), service('third', seen)], config, {
      name: 'hosted',
      logger: testLogger('hosted'),
      connect: async () => ({ url: t.url }),
      pool: { max: 5, name: 'shared', applicationName: 'hosted-shared' },
      migrations: [busMigrations],
      dataDir: '/keys/here',
    });

    expect((await t.db.raw(`select to_regclass('bus.messages') as migrated`)).rows).toEqual([{ migrated: 'bus.messages' }]);
    for (const name of ['first', 'second', 'third']) expect(await (await fetch(`${running.url}/functions/v1/${name}`)).json()).toEqual({ name });
    const ready = await fetch(`${running.url}/readyz`);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { database: 'ok', first: 'ok', second: 'ok', third: 'ok' } });
    // The first and the third share the process's pool and bus client; the second has its own, of the size it asked for.
    expect(seen.first).toMatchObject({ poolMax: 5, dataDir: '/keys/here' });
    expect(seen.second).toMatchObject({ poolMax: 3, dataDir: '/keys/here' });
    expect(seen.third!.db).toBe(seen.first!.db);
    expect(seen.third!.bus).toBe(seen.first!.bus);
    expect(seen.second!.db).not.toBe(seen.first!.db);
    expect(seen.second!.bus).not.toBe(seen.first!.bus);
    // Work every service asks for is done once for the process, and each gets its result.
    expect(readKeys).toBe(1);
    for (const name of ['first', 'second', 'third']) expect(seen[name]!.keys).toEqual({ dataDir: '/keys/here', read: 1 });
    // One registry for the process, with no service's name on its metrics, and every pool in it.
    const metrics = await (await fetch(`${running.url}/metrics`)).text();
    expect(metrics).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(metrics).toContain('db_pool_connections{pool="shared",state="max"} 5');
    expect(metrics).toContain('db_pool_connections{pool="second",state="max"} 3');

    const report = await running.lifecycle.shutdown();
    expect(report.steps.map((s) => s.name)).toEqual(['http', 'third-worker', 'second-worker', 'second-bus', 'second-db-pool', 'first-worker', 'bus', 'db-pool']);
  });
});
