import { EventEmitter } from 'node:events';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { busMigrations } from '@svc/bus';
import { env } from '@svc/runtime';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import type { ServiceDefinition } from './definition';
import { startService } from './run-service';

/** A process's signals, as the lifecycle sees them; `exit` records the code instead of exiting. */
class FakeProcess extends EventEmitter {
  readonly exits: number[] = [];
  exit(code: number): void {
    this.exits.push(code);
  }
}

describeWithPostgres('startService: the one way a service starts', () => {
  let t: TestDatabase;
  const environment = () => ({ DATABASE_URL: t.url, PORT: '0', LOG_LEVEL: 'silent', GREETING: 'hello' });
  const configSpec = { GREETING: env.string({ description: 'a setting of the service', default: 'hi' }) };

  beforeAll(async () => {
    t = await createTestDatabase([busMigrations]);
  });
  afterAll(() => t.drop());

  it('hands build the shared context, serves its routes and readiness checks, and stops its parts before the bus and the pool', async () => {
    const stopped: string[] = [];
    const signals = new FakeProcess();
    const definition: ServiceDefinition<typeof configSpec> = {
      name: 'example',
      configSpec,
      async build({ config, lifecycle, bus, db }) {
        expect(config.GREETING).toBe('hello');
        await db.raw('select 1');
        expect(typeof bus.produce).toBe('function');
        lifecycle.registerFirst('example-worker', () => {
          stopped.push('example-worker');
        });
        return {
          mount: (router) => router.get('/greeting', (_req, res) => res.json({ greeting: config.GREETING })),
          readiness: { worker: async () => 'ok' },
        };
      },
    };
    const running = await startService(definition, environment(), signals);
    expect(await (await fetch(`${running.url}/functions/v1/greeting`)).json()).toEqual({ greeting: 'hello' });
    const ready = await fetch(`${running.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { database: 'ok', worker: 'ok' } });
    // Every metric carries the service's name.
    expect(await (await fetch(`${running.url}/metrics`)).text()).toMatch(/process_cpu_user_seconds_total\{service="example"\}/);

    signals.emit('SIGTERM', 'SIGTERM');
    const report = await running.lifecycle.shutdown();
    expect(report.steps.map((s) => s.name)).toEqual(['http', 'example-worker', 'bus', 'db-pool']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(signals.exits).toEqual([0]);
    expect(stopped).toEqual(['example-worker']);
  });

  it('a build that fails stops what was started, and the start fails with its error', async () => {
    const definition: ServiceDefinition<typeof configSpec> = {
      name: 'broken',
      configSpec,
      async build({ lifecycle }) {
        lifecycle.registerFirst('half-built', () => undefined);
        throw new Error('no such broker');
      },
    };
    await expect(startService(definition, environment())).rejects.toThrow('no such broker');
  });
});
