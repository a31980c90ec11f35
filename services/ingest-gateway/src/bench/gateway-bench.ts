import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { busMigrations } from '@svc/bus';
import {
  AccountsStore,
  accountsMigrations,
  createDb,
  freePort,
  rateLimitMigrations,
  runMigrations,
  startEmbeddedPostgres,
  type Db,
} from '@svc/runtime';
import { batchBody, runLoad, type LoadResult } from './load';

/**
 * Gateway benchmark: the gateway runs as its own process (dist/main.js) on the
 * Postgres tier, and on the Kafka tier when KAFKA_BROKERS and
 * SCHEMA_REGISTRY_URL are given; this process generates the load. Steps of
 * rising concurrency, each with fresh organisations (so the spec's per-minute
 * limits do not carry over) spread over 10 loopback source addresses.
 * Writes the table into docs/benchmarks.md. Everything stays on 127.0.0.1/8.
 */
const STEP_MS = Number(process.env.BENCH_STEP_MS ?? 10_000);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,4,8,16,32').split(',').map(Number);
const SOURCE_IPS = Array.from({ length: 10 }, (_, i) => `127.0.0.${i + 1}`);
const ORGS_PER_STEP = 12;
const GATEWAY_MAIN = path.resolve(__dirname, '../main.js');
const DOC = path.resolve(__dirname, '../../../../docs/benchmarks.md');

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-gw-'));
  const pg = await startEmbeddedPostgres({ dataDir });
  const db = createDb({ url: pg.url, poolMax: 4, applicationName: 'bench' });
  try {
    await runMigrations(db, [accountsMigrations, rateLimitMigrations, busMigrations]);
    const tiers: Array<{ name: string; env: Record<string, string> }> = [{ name: 'Postgres-backed log', env: {} }];
    if (process.env.KAFKA_BROKERS && process.env.SCHEMA_REGISTRY_URL) {
      tiers.push({ name: 'Kafka', env: { KAFKA_BROKERS: process.env.KAFKA_BROKERS, SCHEMA_REGISTRY_URL: process.env.SCHEMA_REGISTRY_URL } });
    }
    const sections: string[] = [];
    for (const tier of tiers) {
      const results = await benchTier(db, pg.url, tier.env);
      sections.push(table(tier.name, results));
    }
    await writeSection(sections.join('\n'));
    console.log(sections.join('\n'));
  } finally {
    await db.destroy();
    await pg.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function benchTier(db: Db, databaseUrl: string, env: Record<string, string>): Promise<LoadResult[]> {
  const port = await freePort();
  const nodeArgs = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const gateway = spawn(process.execPath, [...nodeArgs, GATEWAY_MAIN], {
    env: { ...process.env, ...env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', TOPIC_PREFIX: `bench${Date.now()}.` },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    await waitReady(`http://127.0.0.1:${port}`, gateway);
    const accounts = new AccountsStore(db);
    const runId = randomBytes(4).toString('hex');
    const results: LoadResult[] = [];
    for (const concurrency of CONCURRENCY) {
      const keys: string[] = [];
      for (let i = 0; i < ORGS_PER_STEP; i++) {
        const org = await accounts.createOrganization({ name: `bench-${runId}-${concurrency}-${i}` });
        keys.push((await accounts.createApiKey({ orgId: org.id, type: 'write' })).key);
      }
      const result = await runLoad({
        url: `http://127.0.0.1:${port}/functions/v1/v1-batch`,
        keys,
        sourceIps: SOURCE_IPS,
        concurrency,
        durationMs: STEP_MS,
        body: (seq) => batchBody(seq, `${runId}c${concurrency}`),
      });
      console.error(`concurrency ${concurrency}: ${Math.round(result.eventsPerSecond)} events/s, p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms, non-200 ${result.non200}`);
      results.push(result);
    }
    return results;
  } finally {
    gateway.kill('SIGTERM');
    await new Promise((r) => gateway.once('exit', r));
  }
}

async function waitReady(url: string, child: ChildProcess): Promise<void> {
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`gateway exited with ${child.exitCode}`);
    if ((await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('gateway not ready within 60 s');
}

function table(tier: string, results: LoadResult[]): string {
  const rows = results.map(
    (r) =>
      `| ${r.concurrency} | ${r.requests} | ${Math.round(r.eventsPerSecond).toLocaleString('en')} | ${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} | ${r.non200} |`,
  );
  return [`#### ${tier}`, '', '| concurrency | requests | events/s accepted | p50 ms | p99 ms | non-200 |', '|---|---|---|---|---|---|', ...rows, ''].join('\n');
}

/** Replaces the gateway section of docs/benchmarks.md, keeping the rest. */
async function writeSection(body: string): Promise<void> {
  const start = '<!-- gateway-bench:start -->';
  const end = '<!-- gateway-bench:end -->';
  const doc = await readFile(DOC, 'utf8').catch(() => `# Benchmarks\n\n${start}\n${end}\n`);
  const stamp = `_Measured ${new Date().toISOString().slice(0, 10)} by \`npm run bench\` (services/ingest-gateway), ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB; ${STEP_MS / 1000} s per step._\n\n`;
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  const next = i >= 0 && j > i ? `${doc.slice(0, i + start.length)}\n${stamp}${body}${doc.slice(j)}` : `${doc}\n${start}\n${stamp}${body}${end}\n`;
  await writeFile(DOC, next);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
