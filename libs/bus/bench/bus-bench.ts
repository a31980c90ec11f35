/**
 * Throughput of the two bus adapters, for 1 KB messages produced in calls of
 * 100: produce rate (one call in flight, then four), the rate a fresh group
 * drains the backlog, and end to end (consumer live while one producer
 * writes). Prints a markdown table.
 *
 *   npm run bench -w @svc/bus          # builds this file (bench/tsconfig.json) and runs it
 *
 * Talks only to 127.0.0.1. Uses KAFKA_BROKERS + SCHEMA_REGISTRY_URL and
 * DATABASE_URL (a superuser URL; the bench creates and drops its own database)
 * when set; otherwise starts Kafka and the registry with infra/local and an
 * embedded PostgreSQL in a temporary directory, and stops them at the end.
 * Every phase has a deadline, so the run always ends.
 *
 * Knobs: BENCH_MESSAGES (default 50000), BENCH_PARTITIONS (8),
 * BENCH_ADAPTERS (default "postgres-log,kafka,kafka-gzip").
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import pg from 'pg';
import type { TopicSpec } from '@svc/contracts';
import { createDb, ensureDatabase, freePort, runMigrations, startEmbeddedPostgres, type Db } from '@svc/runtime';
import { createKafkaBus } from '../src/kafka';
import type { Bus, OutgoingMessage } from '../src/port';
import { busMigrations, createPostgresLogBus } from '../src/postgres-log';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 50_000);
const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 8);
const ADAPTERS = (process.env.BENCH_ADAPTERS ?? 'postgres-log,kafka,kafka-gzip').split(',').map((s) => s.trim());
const CALL_SIZE = 100;
/** Messages produced before measuring: connections, schema ids, and the JIT of both Node and a fresh broker. */
const WARM_UP = Math.min(10_000, MESSAGES);
const PHASE_DEADLINE_MS = 180_000;

const Payload = Type.Object(
  { id: Type.String(), key: Type.String(), seq: Type.Integer({ minimum: 0 }), sentAt: Type.Number(), body: Type.String() },
  { $id: 'bench.payload/v1', additionalProperties: false },
);
type Payload = { id: string; key: string; seq: number; sentAt: number; body: string };

/** ~1 KB of JSON, half random (does not compress) and half repetitive (does), like an event's properties. */
function message(run: string, seq: number): OutgoingMessage<Payload> {
  const key = `user-${seq % 1000}`;
  const body = randomBytes(220).toString('hex') + ' "page":"/checkout","plan":"pro","currency":"INR"'.repeat(10);
  return { key, value: { id: `${run}-${seq}`, key, seq, sentAt: 0, body } };
}

interface Row {
  adapter: string;
  /** CPU time per message while producing with one call in flight: this process, and the broker's when we started it. */
  clientCpuUs: number;
  brokerCpuUs: number;
  produce1: number;
  produce4: number;
  drain: number;
  e2e: number;
  p50: number;
  p99: number;
}

async function main(): Promise<void> {
  const cleanups: Array<() => Promise<void>> = [];
  const cleanup = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch((err: unknown) => console.error('cleanup:', err));
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void cleanup().finally(() => process.exit(130)));
  }
  const rows: Row[] = [];
  try {
    for (const adapter of ADAPTERS) {
      const factory = adapter === 'postgres-log' ? await postgresFactory(cleanups) : await kafkaFactory(adapter, cleanups);
      console.error(`[bench] ${adapter}: ${MESSAGES} messages of ~1 KB, ${PARTITIONS} partitions, calls of ${CALL_SIZE}`);
      rows.push(await measure(adapter, factory));
    }
  } finally {
    await cleanup();
  }
  const n = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'timeout');
  console.log(`\n${MESSAGES.toLocaleString('en-US')} messages of ~1 KB, ${PARTITIONS} partitions, produce() calls of ${CALL_SIZE}; ${os.cpus().length} CPUs\n`);
  const us = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '–');
  console.log(
    '| adapter | produce msg/s (1 call in flight) | produce msg/s (4 in flight) | drain backlog msg/s | end-to-end msg/s | e2e latency p50 / p99 ms | CPU µs/msg producing: client / broker |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(
      `| ${r.adapter} | ${n(r.produce1)} | ${n(r.produce4)} | ${n(r.drain)} | ${n(r.e2e)} | ${n(r.p50)} / ${n(r.p99)} | ${us(r.clientCpuUs)} / ${us(r.brokerCpuUs)} |`,
    );
  }
  console.log(`\nload average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
}

interface BusFactory {
  make(): Bus;
  /** The log server's process, to read its CPU time (only when this bench started it). */
  serverPid?: number;
}

/** CPU seconds a process has used so far (user + system), from /proc; NaN when unknown. */
async function cpuSeconds(pid: number | undefined): Promise<number> {
  if (pid === undefined) return NaN;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name; in clock ticks (100/s on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

async function measure(adapter: string, factory: BusFactory): Promise<Row> {
  const makeBus = () => factory.make();
  const run = randomBytes(3).toString('hex');
  const topic: TopicSpec = { name: `bench-${run}.events`, partitions: PARTITIONS, schema: Payload };
  const producerBus = makeBus();
  const buses: Bus[] = [producerBus];
  try {
    await producerBus.ensureTopics([topic]);
    await produceAll(producerBus, topic, run, 0, WARM_UP, 1);

    const cpuBefore = process.cpuUsage();
    const serverBefore = await cpuSeconds(factory.serverPid);
    const produce1 = await timed(() => produceAll(producerBus, topic, run, 10_000_000, MESSAGES, 1), MESSAGES);
    const cpu = process.cpuUsage(cpuBefore);
    const clientCpuUs = (cpu.user + cpu.system) / MESSAGES;
    const brokerCpuUs = (((await cpuSeconds(factory.serverPid)) - serverBefore) * 1e6) / MESSAGES;
    const produce4 = await timed(() => produceAll(producerBus, topic, run, 20_000_000, MESSAGES, 4), MESSAGES);

    // A fresh group drains everything stored so far (warm-up + both produce phases).
    const backlog = WARM_UP + 2 * MESSAGES;
    const drainBus = makeBus();
    buses.push(drainBus);
    let drained = 0;
    const drainStart = performance.now();
    let drainEnd = Infinity;
    await drainBus.subscribe<Payload>({
      groupId: `bench-${run}-drain`,
      topics: [topic],
      handler: async (batch) => {
        drained += batch.messages.length;
        if (drained >= backlog && drainEnd === Infinity) drainEnd = performance.now();
      },
    });
    await until(() => drainEnd !== Infinity);
    const drain = (backlog / (drainEnd - drainStart)) * 1000;

    // End to end: a live group at the end of the log, one producer writing.
    const liveBus = makeBus();
    buses.push(liveBus);
    const latencies: number[] = [];
    let firstSent = 0;
    let lastSeen = Infinity;
    await liveBus.subscribe<Payload>({
      groupId: `bench-${run}-live`,
      topics: [topic],
      fromBeginning: false,
      handler: async (batch) => {
        const now = Date.now();
        for (const m of batch.messages) if (m.value.seq >= 30_000_000) latencies.push(now - m.value.sentAt);
        if (latencies.length >= MESSAGES && lastSeen === Infinity) lastSeen = performance.now();
      },
    });
    await sleep(1_000); // let the group settle at the log's end before the clock starts
    firstSent = performance.now();
    await produceAll(producerBus, topic, run, 30_000_000, MESSAGES, 1, true);
    await until(() => lastSeen !== Infinity);
    const e2e = (MESSAGES / (lastSeen - firstSent)) * 1000;
    latencies.sort((a, b) => a - b);
    const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? NaN;
    return { adapter, clientCpuUs, brokerCpuUs, produce1, produce4, drain, e2e, p50: pct(0.5), p99: pct(0.99) };
  } catch (err) {
    console.error(`[bench] ${adapter} failed:`, err);
    return { adapter, clientCpuUs: NaN, brokerCpuUs: NaN, produce1: NaN, produce4: NaN, drain: NaN, e2e: NaN, p50: NaN, p99: NaN };
  } finally {
    for (const b of buses.reverse()) await b.close().catch(() => undefined);
  }
}

/** Produces `count` messages in calls of CALL_SIZE, `inFlight` calls at a time. */
async function produceAll(
  bus: Bus,
  topic: TopicSpec,
  run: string,
  firstSeq: number,
  count: number,
  inFlight: number,
  stamp = false,
): Promise<void> {
  let next = 0;
  const deadline = Date.now() + PHASE_DEADLINE_MS;
  const worker = async () => {
    while (next < count) {
      if (Date.now() > deadline) throw new Error('produce phase exceeded its deadline');
      const from = next;
      next = Math.min(count, next + CALL_SIZE);
      const batch = Array.from({ length: next - from }, (_, i) => message(run, firstSeq + from + i));
      if (stamp) for (const m of batch) m.value.sentAt = Date.now();
      const results = await bus.produce(topic, batch);
      const failed = results.find((r) => !r.ok);
      if (failed && !failed.ok) throw failed.error;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

async function timed(work: () => Promise<void>, count: number): Promise<number> {
  const start = performance.now();
  await work();
  return (count / (performance.now() - start)) * 1000;
}

async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + PHASE_DEADLINE_MS;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`phase exceeded ${PHASE_DEADLINE_MS} ms`);
    await sleep(5);
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---- infrastructure ------------------------------------------------------------------------

async function postgresFactory(cleanups: Array<() => Promise<void>>): Promise<BusFactory> {
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-pg-'));
    // Default (durable) settings: fsync and synchronous_commit on, as in production.
    const server = await startEmbeddedPostgres({ dataDir: dir });
    cleanups.push(async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    });
    adminUrl = server.adminUrl;
  }
  assertLocal(adminUrl);
  const name = `svc_bench_${randomBytes(4).toString('hex')}`;
  await ensureDatabase(adminUrl, name);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db: Db = createDb({ url: url.toString(), poolMax: 10, applicationName: 'svc-bench' });
  await runMigrations(db, [busMigrations]);
  cleanups.push(async () => {
    await db.destroy();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  });
  return { make: () => createPostgresLogBus({ db, url: url.toString() }) };
}

interface KafkaEndpoints {
  brokers: string[];
  registryUrl: string;
  brokerPid?: number;
}

let kafkaEndpoints: Promise<KafkaEndpoints> | undefined;

async function kafkaFactory(adapter: string, cleanups: Array<() => Promise<void>>): Promise<BusFactory> {
  kafkaEndpoints ??= startKafka(cleanups).then(async (endpoints) => {
    await warmBroker(endpoints);
    return endpoints;
  });
  const { brokers, registryUrl, brokerPid } = await kafkaEndpoints;
  const compression = adapter === 'kafka-gzip' ? 'gzip' : 'none';
  return {
    make: () => createKafkaBus({ brokers, registryUrl, clientId: 'svc-bench', compression }),
    ...(brokerPid === undefined ? {} : { serverPid: brokerPid }),
  };
}

/**
 * A fresh JVM spends its first tens of thousands of messages compiling
 * (C2): without this, whichever Kafka variant runs first pays for it.
 * Unmeasured traffic, compressed and not, produced and consumed.
 */
async function warmBroker({ brokers, registryUrl }: KafkaEndpoints): Promise<void> {
  console.error('[bench] warming up the broker (unmeasured)...');
  const run = randomBytes(3).toString('hex');
  const topic: TopicSpec = { name: `bench-${run}.warm-up`, partitions: PARTITIONS, schema: Payload };
  const buses = (['none', 'gzip'] as const).map((compression) => createKafkaBus({ brokers, registryUrl, clientId: 'svc-bench', compression }));
  try {
    const count = Math.min(20_000, MESSAGES);
    let seen = 0;
    for (const [i, bus] of buses.entries()) await produceAll(bus, topic, run, i * count, count, 4);
    await buses[0]?.subscribe({
      groupId: `bench-${run}-warm-up`,
      topics: [topic],
      handler: async (batch) => {
        seen += batch.messages.length;
      },
    });
    await until(() => seen >= 2 * count);
  } finally {
    for (const bus of buses) await bus.close();
  }
}

async function startKafka(cleanups: Array<() => Promise<void>>): Promise<KafkaEndpoints> {
  const brokersEnv = process.env.KAFKA_BROKERS;
  const registryEnv = process.env.SCHEMA_REGISTRY_URL;
  if (brokersEnv && registryEnv) {
    for (const b of brokersEnv.split(',')) assertLocal(`tcp://${b}`);
    assertLocal(registryEnv);
    return { brokers: brokersEnv.split(','), registryUrl: registryEnv };
  }
  const infra = findInfra();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-kafka-'));
  const kafkaDir = path.join(dir, 'kafka');
  const registryDir = path.join(dir, 'registry');
  // Full C2 JIT for a throughput run (the test default is C1 only, for fast start-up).
  const env = { KAFKA_JVM_OPTS: process.env.KAFKA_JVM_OPTS ?? '', KAFKA_CONTROLLER_PORT: String(await freePort()) };
  const kafkaPort = await freePort();
  console.error('[bench] starting Kafka and the schema registry (infra/local)...');
  const brokers = lastValue(await script(infra, 'kafka.sh', ['start', kafkaDir, String(kafkaPort)], env));
  cleanups.push(async () => {
    await script(infra, 'kafka.sh', ['stop', kafkaDir], {});
    await rm(dir, { recursive: true, force: true });
  });
  const registryUrl = lastValue(await script(infra, 'registry.sh', ['start', registryDir, String(await freePort())], {}));
  cleanups.push(async () => {
    await script(infra, 'registry.sh', ['stop', registryDir], {});
  });
  const brokerPid = Number((await readFile(path.join(kafkaDir, 'kafka.pid'), 'utf8').catch(() => '')).trim()) || undefined;
  return { brokers: brokers.split(','), registryUrl, ...(brokerPid === undefined ? {} : { brokerPid }) };
}

function findInfra(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'infra', 'local');
    if (existsSync(path.join(candidate, 'kafka.sh'))) return candidate;
  }
  throw new Error('infra/local not found above the bench; set KAFKA_BROKERS and SCHEMA_REGISTRY_URL');
}

function script(dir: string, name: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', [path.join(dir, name), ...args], { timeout: 600_000, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${name} ${args[0]} failed: ${err.message}\n${stderr.slice(-2000)}`));
      else resolve(stdout);
    });
  });
}

const lastValue = (out: string) => {
  const last = out.trim().split('\n').pop() ?? '';
  return last.slice(last.indexOf('=') + 1);
};

/** The bench never talks to anything but this machine. */
function assertLocal(url: string): void {
  const host = new URL(url).hostname;
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(host)) throw new Error(`bench: refusing non-local endpoint ${host}`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
