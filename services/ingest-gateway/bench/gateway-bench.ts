import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import {
  env,
  freePort,
  loadConfigOrExit,
  SERVICE_NODE_FLAGS,
} from '@svc/runtime';
// Modules alone: the package's index loads jest's globals, which refuse to run outside jest.
import { markdownTable, writeDocSection } from '@svc/testkit/dist/benchmarks-doc';
import { cpuSeconds, machineSeconds, stopAll, waitReady } from '@svc/testkit/dist/processes';
import { BENCH_IDENTIFIER_HASH_KEYS, BENCH_RAW_LOG_MASTER_KEY, startBenchDatabase, type BenchDatabase } from './bench-database';
import { batchBody, runLoad, type LoadOptions, type LoadResult } from './load';

/**
 * Gateway benchmark: the gateway runs as its own process (dist/main.js) on the
 * Postgres tier, and on the Kafka tier when KAFKA_BROKERS and
 * SCHEMA_REGISTRY_URL are given; this process generates the load. Steps of
 * rising concurrency, each with fresh organisations (so the spec's per-minute
 * limits do not carry over) spread over 10 loopback source addresses.
 * Writes the table into docs/benchmarks.md. Everything stays on 127.0.0.1/8.
 * Besides throughput and latency it reports the CPU the gateway (every
 * process and thread of it) used per accepted event: on a shared machine
 * that moves far less than events/s does, so compare builds with it.
 *
 * Each tier is measured with one gateway process and with two replicas (as
 * a deployment scales it, behind a load balancer: here the load generator
 * spreads its connections over them); BENCH_GATEWAY_REPLICAS (e.g. `1,2`).
 *
 * Knobs: benchConfigSpec below.
 */
const benchConfigSpec = {
  BENCH_STEP_MS: env.int({ description: 'Length of each measured step, ms', default: 10_000, min: 1 }),
  BENCH_CONCURRENCY: env.list({ description: 'Requests in flight, one step each', default: ['1', '4', '8', '16', '32'] }),
  BENCH_TIERS: env.list({ description: '`postgres`, `kafka` or both: which tiers to measure', default: ['postgres', 'kafka'] }),
  BENCH_WRITE_DOC: env.bool({ description: 'Write the tables into docs/benchmarks.md (false: print only)', default: true }),
  BENCH_BATCH_EVENTS: env.int({ description: 'Events per request (100: a collector\'s batch; 5 to 30: what the browser library sends)', default: 100, min: 1, max: 500 }),
  BENCH_WARMUP_MS: env.int({ description: 'Unmeasured load first, so JIT and first-use compilation are not counted', default: 3_000, min: 0 }),
  BENCH_GATEWAY_REPLICAS: env.list({ description: 'Gateway processes per run, one run each', default: ['1', '2'] }),
  BENCH_GATEWAY_MAIN: env.optionalString({ description: "Another build's main.js to measure (A/B runs); default this one" }),
  BENCH_GATEWAY_NODE_ARGS: env.string({
    description: "The gateway's node options (default: what every service runs with; set to compare V8 heap settings)",
    default: SERVICE_NODE_FLAGS.join(' '),
  }),
  BENCH_CPU_PROF: env.optionalString({ description: 'Directory the gateway writes a V8 CPU profile into on exit' }),
  BENCH_WATCH_PIDS: env.list({ description: "Other processes whose CPU to report (e.g. the broker's and the registry's)", default: [] }),
  BENCH_PEER_URL: env.optionalString({ description: "A peer gateway's batch URL (e.g. rudder-server's /v1/batch): each step is run against it too, in the same minutes (in turn which first), with the same load" }),
  BENCH_PEER_AUTH: env.string({ description: "The peer's Authorization header value", default: '' }),
  BENCH_PEER_PID: env.int({ description: "The peer gateway's pid, whose CPU is counted as ours is (0: not counted)", default: 0, min: 0 }),
  KAFKA_BROKERS: env.optionalString({ description: 'The Kafka tier is measured when this and SCHEMA_REGISTRY_URL are set' }),
  SCHEMA_REGISTRY_URL: env.optionalString({ description: 'The schema registry of the Kafka tier' }),
};
const knobs = loadConfigOrExit(benchConfigSpec, process.env);

const STEP_MS = knobs.BENCH_STEP_MS;
const CONCURRENCY = knobs.BENCH_CONCURRENCY.map(Number);
const SOURCE_IPS = Array.from({ length: 10 }, (_, i) => `127.0.0.${i + 1}`);
const ORGS_PER_STEP = 12;
const REPLICAS = knobs.BENCH_GATEWAY_REPLICAS.map(Number);
// This file runs from bench/dist/bench/; the gateway it measures is the package's build.
const GATEWAY_MAIN = knobs.BENCH_GATEWAY_MAIN ?? path.resolve(__dirname, '../../../dist/main.js');
const WATCH_PIDS = knobs.BENCH_WATCH_PIDS.map(Number);

async function main(): Promise<void> {
  const database = await startBenchDatabase();
  try {
    const tiers: Array<{ name: string; env: Record<string, string> }> = [];
    if (knobs.BENCH_TIERS.includes('postgres')) tiers.push({ name: 'Postgres-backed log', env: {} });
    const { KAFKA_BROKERS, SCHEMA_REGISTRY_URL } = knobs;
    if (knobs.BENCH_TIERS.includes('kafka') && KAFKA_BROKERS && SCHEMA_REGISTRY_URL) {
      // The bench runs one broker: one replica per topic.
      tiers.push({ name: 'Kafka', env: { KAFKA_BROKERS, SCHEMA_REGISTRY_URL, KAFKA_REPLICATION_FACTOR: '1', KAFKA_MIN_INSYNC_REPLICAS: '1' } });
    }
    const sections: string[] = [];
    for (const tier of tiers) {
      for (const replicas of REPLICAS) {
        const { ours, peer } = await benchTier(database, tier.env, replicas);
        const name = `${tier.name}, ${replicas === 1 ? 'one gateway process' : `${replicas} gateway replicas`}`;
        sections.push(table(name, ours));
        if (peer.length > 0) sections.push(peerTable(name, ours, peer));
      }
    }
    const stamp = `_Measured ${new Date().toISOString().slice(0, 10)} by \`npm run bench\` (services/ingest-gateway), ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB; ${knobs.BENCH_BATCH_EVENTS} events per request, ${STEP_MS / 1000} s per step._\n\n`;
    if (knobs.BENCH_WRITE_DOC) await writeDocSection('benchmarks.md', 'gateway-bench', stamp + sections.join('\n'));
    console.log(sections.join('\n'));
  } finally {
    await database.stop();
  }
}

/** A step's load figures, plus the CPU the gateway (all its processes) and any watched processes used meanwhile. */
interface StepResult extends LoadResult {
  /** Gateway CPU (user + system, every replica and process of it) per accepted event, µs. */
  gatewayCpuUsPerEvent: number;
  /** Gateway CPU over the step's wall time: 1.0 is one core kept busy. */
  gatewayCores: number;
  /** The same for BENCH_WATCH_PIDS (e.g. the broker's), when given. */
  watchedCores: number | undefined;
  /** The same for this process, the load generator. */
  loadCores: number;
  /** The machine's 1-minute load average at the end of the step (the machine may be shared). */
  loadAverage: number;
  /** Cores the hypervisor took from this machine over the step (see machineSeconds). */
  stolenCores: number;
  /**
   * The whole machine's CPU per accepted event, less the load generator's:
   * the gateway and the database it commits to (and whatever else runs).
   */
  machineCpuUsPerEvent: number;
}

async function benchTier(database: BenchDatabase, env: Record<string, string>, replicas: number): Promise<{ ours: StepResult[]; peer: StepResult[] }> {
  const nodeArgs = knobs.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${knobs.BENCH_CPU_PROF}`] : [];
  nodeArgs.push(...knobs.BENCH_GATEWAY_NODE_ARGS.split(' ').filter(Boolean));
  const topicPrefix = `bench${Date.now()}.`;
  const gateways: Array<{ child: ChildProcess; port: number }> = [];
  for (let i = 0; i < replicas; i++) {
    const port = await freePort();
    const child = spawn(process.execPath, [...nodeArgs, GATEWAY_MAIN], {
      // Only what it is given: the bench's own environment is its knobs, not the gateway's.
      env: { ...env, DATABASE_URL: database.url, RAW_LOG_MASTER_KEY: BENCH_RAW_LOG_MASTER_KEY, IDENTIFIER_HASH_KEYS: BENCH_IDENTIFIER_HASH_KEYS, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', TOPIC_PREFIX: topicPrefix },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    gateways.push({ child, port });
  }
  try {
    for (const g of gateways) await waitReady(`http://127.0.0.1:${g.port}`, g.child);
    const runId = randomBytes(4).toString('hex');
    /** Who a step loads: our gateway replicas, or the peer (its own auth; it answers a whole batch with `ok`). */
    interface Target {
      name: 'ours' | 'peer';
      urls: string[];
      keys(label: string): Promise<string[]>;
      cpuSeconds(): number;
      load?: Pick<LoadOptions, 'authorization' | 'accepted'>;
    }
    const ours: Target = {
      name: 'ours',
      urls: gateways.map((g) => `http://127.0.0.1:${g.port}/functions/v1/v1-batch`),
      keys: (label) => database.writeKeys(`bench-${runId}-${label}`, ORGS_PER_STEP),
      cpuSeconds: () => gateways.reduce((sum, g) => sum + cpuSeconds(g.child.pid), 0),
    };
    const peerUrl = knobs.BENCH_PEER_URL;
    const peerTarget: Target | undefined = peerUrl
      ? {
          name: 'peer',
          urls: [peerUrl],
          keys: async () => ['peer'],
          cpuSeconds: () => (knobs.BENCH_PEER_PID ? cpuSeconds(knobs.BENCH_PEER_PID) : 0),
          load: { authorization: () => knobs.BENCH_PEER_AUTH, accepted: () => knobs.BENCH_BATCH_EVENTS },
        }
      : undefined;
    const step = async (label: string, concurrency: number, durationMs: number, target: Target = ours): Promise<StepResult> => {
      const keys = await target.keys(label);
      const cpu0 = target.cpuSeconds();
      const watched0 = WATCH_PIDS.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
      const own0 = process.cpuUsage();
      const machine0 = machineSeconds();
      const load = await runLoad({
        urls: target.urls,
        keys,
        sourceIps: SOURCE_IPS,
        concurrency,
        durationMs,
        body: (seq) => batchBody(seq, `${runId}${label}${target.name}`, knobs.BENCH_BATCH_EVENTS),
        ...target.load,
      });
      const own = process.cpuUsage(own0);
      const cpu = target.cpuSeconds() - cpu0;
      const machine = machineSeconds();
      const watched = WATCH_PIDS.reduce((sum, pid) => sum + cpuSeconds(pid), 0) - watched0;
      return {
        ...load,
        gatewayCpuUsPerEvent: load.eventsAccepted > 0 ? (cpu * 1e6) / load.eventsAccepted : 0,
        gatewayCores: cpu / load.seconds,
        watchedCores: WATCH_PIDS.length > 0 ? watched / load.seconds : undefined,
        loadCores: (own.user + own.system) / 1e6 / load.seconds,
        loadAverage: os.loadavg()[0] ?? 0,
        stolenCores: (machine.steal - machine0.steal) / load.seconds,
        machineCpuUsPerEvent:
          load.eventsAccepted > 0 ? ((machine.busy - machine0.busy - (own.user + own.system) / 1e6) * 1e6) / load.eventsAccepted : 0,
      };
    };
    if (knobs.BENCH_WARMUP_MS > 0) await step('w', CONCURRENCY[0] ?? 4, knobs.BENCH_WARMUP_MS);
    if (knobs.BENCH_WARMUP_MS > 0 && peerTarget) await step('w', CONCURRENCY[0] ?? 4, knobs.BENCH_WARMUP_MS, peerTarget);
    const results: StepResult[] = [];
    const peer: StepResult[] = [];
    const runPeer = async (concurrency: number, target: Target) => {
      const p = await step(`c${concurrency}`, concurrency, STEP_MS, target);
      console.error(`peer, concurrency ${concurrency}: ${Math.round(p.eventsPerSecond)} events/s, p50 ${p.p50Ms.toFixed(1)} ms, p99 ${p.p99Ms.toFixed(1)} ms, non-200 ${p.non200}, ${p.gatewayCpuUsPerEvent.toFixed(1)} µs CPU/event (${p.gatewayCores.toFixed(2)} cores), machine less load generator ${p.machineCpuUsPerEvent.toFixed(1)} µs/event`);
      peer.push(p);
    };
    const runOurs = async (concurrency: number) => {
      const r = await step(`c${concurrency}`, concurrency, STEP_MS);
      console.error(
        `replicas ${replicas}, concurrency ${concurrency}: ${Math.round(r.eventsPerSecond)} events/s, p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms, ` +
          `non-200 ${r.non200}, gateway ${r.gatewayCpuUsPerEvent.toFixed(1)} µs CPU/event (${r.gatewayCores.toFixed(2)} cores), machine less load generator ${r.machineCpuUsPerEvent.toFixed(1)} µs/event` +
          `${r.watchedCores === undefined ? '' : `, watched ${r.watchedCores.toFixed(2)} cores`}, load generator ${r.loadCores.toFixed(2)} cores, stolen ${r.stolenCores.toFixed(2)} cores, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`,
      );
      results.push(r);
    };
    for (const [i, concurrency] of CONCURRENCY.entries()) {
      if (!peerTarget) {
        await runOurs(concurrency);
      } else if (i % 2 === 0) {
        // Interleaved in the same minutes, and in turn which goes first: what one side leaves
        // running (the peer's database writing out its rows, our broker's flushes) lands in the
        // step after it, so neither side always pays for the other.
        await runPeer(concurrency, peerTarget);
        await runOurs(concurrency);
      } else {
        await runOurs(concurrency);
        await runPeer(concurrency, peerTarget);
      }
    }
    return { ours: results, peer };
  } finally {
    await stopAll(gateways.map((g) => g.child));
  }
}

function table(tier: string, results: StepResult[]): string {
  const rows = results.map((r) => [
    String(r.concurrency), String(r.requests), Math.round(r.eventsPerSecond).toLocaleString('en'), r.p50Ms.toFixed(1), r.p99Ms.toFixed(1), String(r.non200),
    r.gatewayCpuUsPerEvent.toFixed(0), r.gatewayCores.toFixed(2), r.stolenCores.toFixed(2), r.loadAverage.toFixed(1),
  ]);
  return markdownTable(
    `#### ${tier}`,
    ['concurrency', 'requests', 'events/s accepted', 'p50 ms', 'p99 ms', 'non-200', 'gateway CPU µs/event', 'gateway cores busy', 'cores stolen by the hypervisor', 'load avg (1 min)'],
    rows,
  );
}

/** Ours against the peer, step by step (the two steps ran one after the other, in turn which first, with the same load). */
function peerTable(tier: string, ours: StepResult[], peer: StepResult[]): string {
  const rows = ours.map((o, i) => {
    const p = peer[i]!;
    return [
      String(o.concurrency), Math.round(o.eventsPerSecond).toLocaleString('en'), Math.round(p.eventsPerSecond).toLocaleString('en'), (o.eventsPerSecond / p.eventsPerSecond).toFixed(2),
      o.p99Ms.toFixed(1), p.p99Ms.toFixed(1), o.gatewayCpuUsPerEvent.toFixed(0), p.gatewayCpuUsPerEvent.toFixed(0), `${o.non200} / ${p.non200}`,
    ];
  });
  return markdownTable(
    `#### ${tier}: against the peer`,
    ['concurrency', 'ours events/s', 'peer events/s', 'ratio', 'ours p99 ms', 'peer p99 ms', 'ours CPU µs/event', 'peer CPU µs/event', 'non-200 ours / peer'],
    rows,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
