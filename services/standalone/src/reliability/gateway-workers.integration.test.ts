/**
 * GATEWAY_WORKERS: the gateway's built entry point forks that many
 * processes sharing its port (libs/service workers.ts). Requests reach
 * every worker, /metrics counts all of them whichever one a scrape reaches,
 * SIGTERM drains them all, and one worker dying takes the rest down with a
 * failing exit code, so the supervisor restarts the whole gateway.
 */
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { runMigrations } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { createTestDatabase, describeWithPostgres, waitFor, type TestDatabase } from '@svc/testkit';
import { allMigrations } from '../migrations';
import { startServiceProcess, type ServiceProcess } from '../test-support/service-processes';

/** The pids of `pid`'s children (the workers of a primary). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The sum of a counter's samples in a Prometheus text exposition. */
function counterTotal(text: string, name: string): number {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

describeWithPostgres('gateway workers (GATEWAY_WORKERS=2)', () => {
  let database: TestDatabase;
  let writeKey: string;
  let gateway: ServiceProcess | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    await runMigrations(database.db, allMigrations);
    const accounts = new AccountsStore(database.db);
    const org = await accounts.createOrganization({ name: 'workers' });
    writeKey = (await accounts.createApiKey({ orgId: org.id, type: 'write' })).key;
  }, 60_000);
  afterEach(async () => {
    await gateway?.kill();
    gateway = undefined;
  });
  afterAll(async () => {
    await database?.drop();
  });

  const start = () => startServiceProcess('ingest-gateway', { DATABASE_URL: database.url, GATEWAY_WORKERS: '2' });

  describe('serving', () => {
    it('two workers serve the port, and /metrics counts the requests of both', async () => {
      gateway = await start();
      await waitFor('two workers', () => childrenOf(gateway!.pid).length === 2, 30_000);
      const requests = 20;
      for (let i = 0; i < requests; i++) {
        // A connection each: the primary deals connections out to the workers in turn.
        const res = await fetch(`${gateway.origin}/functions/v1/v1-batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${writeKey}`, 'content-type': 'application/json', connection: 'close' },
          body: JSON.stringify({ batch: [{ type: 'track', event: 'Worked', messageId: `w-${i}`, anonymousId: `anon-${i}`, timestamp: new Date().toISOString() }] }),
        });
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({ success: true, processed: 1 });
      }
      const stored = Number((await database.db('bus.messages').where({ topic: 'events.raw' }).count({ n: '*' }).first())?.n);
      expect(stored).toBe(requests);
      // Whichever worker answers the scrape, the count is the whole gateway's.
      for (let scrape = 0; scrape < 4; scrape++) {
        const text = await (await fetch(`${gateway.origin}/metrics`, { headers: { connection: 'close' } })).text();
        expect(counterTotal(text, 'gateway_events_accepted_total')).toBe(requests);
      }
    }, 90_000);
  });

  it('SIGTERM stops every worker, and the primary exits 0', async () => {
    gateway = await start();
    await waitFor('two workers', () => childrenOf(gateway!.pid).length === 2, 30_000);
    const workers = childrenOf(gateway.pid);
    await gateway.stop();
    expect(gateway.exitCode()).toBe(0);
    expect(gateway.stderr()).not.toMatch(/exited \(/);
    expect(workers.filter(alive)).toEqual([]);
  }, 60_000);

  it('a worker killed takes the other down, and the primary exits non-zero for the supervisor', async () => {
    gateway = await start();
    await waitFor('two workers', () => childrenOf(gateway!.pid).length === 2, 30_000);
    const [first, second] = childrenOf(gateway.pid) as [number, number];
    process.kill(first, 'SIGKILL');
    await waitFor('the primary to exit', () => gateway!.exited(), 30_000);
    expect(gateway.exitCode()).toBe(1);
    expect(gateway.stderr()).toMatch(new RegExp(`worker ${first} exited \\(SIGKILL\\); stopping the others`));
    await waitFor('the other worker to stop', () => !alive(second), 30_000);
  }, 60_000);
});
