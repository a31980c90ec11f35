import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { Kafka, logLevel } from 'kafkajs';
import { freePort, pendingMigrations } from '@svc/runtime';
import { allMigrations } from '@svc/standalone';
import { createTestDatabase, describeWithKafka, describeWithPostgres, kafkaEndpoints, kafkaEnv, runNode, testDatabaseForSuite, waitReady } from '@svc/testkit';

/** The built entrypoint, run as the image runs it: `node entrypoint.js <command> [args]`. */
const ENTRYPOINT = path.resolve(__dirname, '../dist/entrypoint.js');
const entrypoint = (args: readonly string[], env: Record<string, string>) => runNode(ENTRYPOINT, args, env);

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** A long-running command, its output gathered for the test to read. */
function start(args: readonly string[], env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [ENTRYPOINT, ...args], { env: { ...process.env, ...env } });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  return { child, output: () => output };
}

async function until(condition: () => boolean, what: string, ms = 15_000): Promise<void> {
  for (const deadline = Date.now() + ms; !condition(); await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}

describe('entrypoint without a database', () => {
  it('names its commands on a wrong one, exit 2', async () => {
    const run = await entrypoint(['gateway'], {});
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('usage: <ingest-gateway|identity-resolver|profile-api|consent-api|conversion-forwarder|migrate|topics|svcctl|healthcheck|smoke-test>');
  });

  it('healthcheck fails when nothing answers /readyz', async () => {
    expect((await entrypoint(['healthcheck'], { PORT: String(await freePort()) })).code).toBe(1);
  });
});

describeWithPostgres('entrypoint on PostgreSQL', () => {
  const t = testDatabaseForSuite(); // empty: the commands below build its schema

  it('a service refuses to start on an unmigrated database, says why, and starts once migrate has run', async () => {
    const port = await freePort();
    const env = { DATABASE_URL: t.url, PORT: String(port), LOG_LEVEL: 'info', IDENTIFIER_HASH_KEYS: randomBytes(32).toString('hex') };
    const service = start(['profile-api'], env);
    try {
      await until(() => service.output().includes('database schema not ready'), 'the waiting log line');
      expect(service.output()).toContain('not starting until the migrate job (`migrate`) has applied them');
      expect((await entrypoint(['healthcheck'], env)).code).toBe(1);

      // Two replicas of the migrate job at once: the advisory lock serialises them, each migration runs once.
      const [a, b] = await Promise.all([entrypoint(['migrate'], env), entrypoint(['migrate'], env)]);
      expect([a.code, b.code]).toEqual([0, 0]);
      const applied = [a, b].flatMap((run) => (JSON.parse(run.stdout.trim()) as { applied: string[] }).applied);
      expect(applied.length).toBeGreaterThan(0);
      expect(new Set(applied).size).toBe(applied.length);
      expect(await pendingMigrations(t.db, allMigrations)).toEqual([]);

      await waitReady(`http://127.0.0.1:${port}`, service.child, 30_000);
      expect(service.output()).toContain('database schema ready');
      expect((await entrypoint(['healthcheck'], env)).code).toBe(0);
      // SIGTERM reaches the service's own ordered shutdown, which exits 0.
      service.child.kill('SIGTERM');
      expect(await exited(service.child)).toBe(0);
      expect(service.output()).toContain('shutdown finished');
    } finally {
      service.child.kill('SIGKILL');
    }
  });

  it('a service still waiting for the schema stops at once on SIGTERM', async () => {
    const fresh = await createTestDatabase();
    try {
      const service = start(['consent-api'], { DATABASE_URL: fresh.url, PORT: String(await freePort()) });
      await until(() => service.output().includes('database schema not ready'), 'the waiting log line');
      service.child.kill('SIGTERM');
      expect(await exited(service.child)).toBe(143);
    } finally {
      await fresh.drop();
    }
  });

  it('migrate on a current schema applies nothing', async () => {
    const run = await entrypoint(['migrate'], { DATABASE_URL: t.url });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout.trim())).toMatchObject({ applied: [], msg: 'schema already current' });
  });

  it('topics on the Postgres-backed log: two at once both succeed', async () => {
    const env = { DATABASE_URL: t.url, TOPIC_PREFIX: 'pgtopics.' };
    const runs = await Promise.all([entrypoint(['topics'], env), entrypoint(['topics'], env)]);
    expect(runs.map((r) => r.code)).toEqual([0, 0]);
    const { rows } = await t.db.raw<{ rows: Array<{ topic: string; partitions: number }> }>(
      `select topic, count(*)::int as partitions from bus.partitions where topic like 'pgtopics.%' group by topic order by topic`,
    );
    expect(rows).toEqual([
      { topic: 'pgtopics.consent.decisions', partitions: 4 },
      { topic: 'pgtopics.conversions.candidates', partitions: 4 },
      { topic: 'pgtopics.events.raw', partitions: 8 },
      { topic: 'pgtopics.events.resolved', partitions: 8 },
      { topic: 'pgtopics.profiles.changes', partitions: 4 },
      { topic: 'pgtopics.profiles.erased', partitions: 4 },
      { topic: 'pgtopics.profiles.erasure-requests', partitions: 4 },
    ]);
  });

  it('svcctl runs the admin CLI with its words', async () => {
    const run = await entrypoint(['svcctl', 'org', 'create', '--name', 'Via entrypoint'], { DATABASE_URL: t.url });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ name: 'Via entrypoint' });
  });
});

describeWithKafka('entrypoint topics on Kafka', () => {
  const t = testDatabaseForSuite();

  it('two at once both succeed: every topic exists with its partitions, its schema registered', async () => {
    const { brokers, registryUrl } = kafkaEndpoints();
    const prefix = `kt${Date.now()}.`;
    const env = { DATABASE_URL: t.url, ...kafkaEnv(), TOPIC_PREFIX: prefix };
    const runs = await Promise.all([entrypoint(['topics'], env), entrypoint(['topics'], env)]);
    expect(runs.map((r) => [r.code, r.stderr])).toEqual([
      [0, ''],
      [0, ''],
    ]);
    const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [`${prefix}events.raw`, `${prefix}profiles.changes`] });
      expect(topics.map((topic) => [topic.name, topic.partitions.length]).sort()).toEqual([
        [`${prefix}events.raw`, 8],
        [`${prefix}profiles.changes`, 4],
      ]);
    } finally {
      await admin.disconnect();
    }
    const subjects = (await (await fetch(`${registryUrl}/subjects`)).json()) as string[];
    expect(subjects).toEqual(expect.arrayContaining([`${prefix}events.raw-value`, `${prefix}consent.decisions-value`, `${prefix}profiles.erased-value`, `${prefix}profiles.erasure-requests-value`]));
  });
});
