import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { freePort } from '@svc/runtime';
import { runNode, waitReady } from '@svc/testkit';

const MAIN = path.resolve(__dirname, '../dist/main.js');
const SVCCTL = path.resolve(__dirname, '../../../tools/svcctl/dist/main.js');

function stopped(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

// The product's own start path: a real embedded PostgreSQL under DATA_DIR, not the test server.
describe('standalone stack (npm start)', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-standalone-'));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('answers /readyz, serves svcctl on the same DATA_DIR while running, and keeps records across restarts', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn' };
    delete process.env.DATABASE_URL;

    let stack = spawn(process.execPath, [MAIN], { env: { ...process.env, ...env }, stdio: 'inherit' });
    await waitReady(url, stack, 45_000);
    // One server for every service: its readiness is the database's and each service's own checks (the resolver's).
    expect(await (await fetch(`${url}/readyz`)).json()).toEqual({ status: 'ready', checks: { database: 'ok', resolving: 'ok' } });
    const created = await runNode(SVCCTL, ['org', 'create', '--name', 'Persisted'], { DATA_DIR: dataDir });
    expect(created.code).toBe(0);
    const org = JSON.parse(created.stdout) as { id: string };

    stack.kill('SIGTERM');
    expect(await stopped(stack)).toBe(0);

    stack = spawn(process.execPath, [MAIN], { env: { ...process.env, ...env }, stdio: 'inherit' });
    await waitReady(url, stack, 45_000);
    const shown = await runNode(SVCCTL, ['org', 'show', '--org', org.id], { DATA_DIR: dataDir });
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: org.id, name: 'Persisted' });

    // The gateway is part of the stack: a batch posted with a fresh key lands in the log.
    const key = JSON.parse((await runNode(SVCCTL, ['key', 'create', '--org', org.id, '--type', 'write'], { DATA_DIR: dataDir })).stdout) as { key: string };
    const res = await fetch(`${url}/functions/v1/v1-batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}` },
      body: JSON.stringify({ batch: [{ type: 'page', messageId: 'sa-1', anonymousId: 'anon-sa', timestamp: new Date().toISOString() }] }),
    });
    expect(await res.json()).toMatchObject({ success: true, processed: 1, failed: 0 });
    const creds = JSON.parse(await readFile(path.join(dataDir, 'postgres.json'), 'utf8')) as { port: number; user: string; password: string };
    const client = new pg.Client({ host: '127.0.0.1', port: creds.port, user: creds.user, password: creds.password, database: 'svc' });
    await client.connect();
    const { rows } = await client.query(`select key, value from bus.messages where topic = 'events.raw'`);
    // Sealed under the visitor's key, which the stack keeps wrapped under the master key it made in DATA_DIR.
    expect(rows).toEqual([{ key: expect.stringMatching(new RegExp(`^${org.id}:[0-9a-f-]{36}$`)), value: { v: 2, orgId: org.id, receivedAt: expect.any(String), requestId: expect.any(String), keyId: expect.any(String), sealed: expect.any(String) } }]);
    expect(JSON.stringify(rows)).not.toMatch(/anon-sa|sa-1/);
    expect((await stat(path.join(dataDir, 'raw-log-master.key'))).mode & 0o777).toBe(0o600);
    // ...and the identity resolver in the same process turns it into a stored event on a profile.
    let stored: Array<{ event_name: string }> = [];
    for (const until = Date.now() + 15_000; stored.length === 0 && Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
      stored = (await client.query(`select event_name from identity.events where org_id = $1 and message_id = 'sa-1'`, [org.id])).rows;
    }
    await client.end();
    expect(stored).toEqual([{ event_name: '$pageview' }]);
    stack.kill('SIGTERM');
    expect(await stopped(stack)).toBe(0);
  });

  it.each([
    ['PORT', 'eighty', /PORT must be an integer/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL must be one of/],
    ['DATABASE_URL', 'not a url', /DATABASE_URL must be a URL: /],
  ])('refuses invalid %s at start with a message naming it', async (name, value, message) => {
    const exit = await runNode(MAIN, [], { [name]: value, DATA_DIR: dataDir });
    expect(exit.code).toBe(78);
    expect(exit.stderr).toMatch(message);
    expect(exit.stderr).not.toContain(name === 'DATABASE_URL' ? value : '\u0000');
  });
});
