import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { env, freePort, loadConfigOrExit, SERVICE_NODE_FLAGS } from '@svc/runtime';
// Modules alone: the package's index loads jest's globals, which refuse to run outside jest.
import { markdownTable, writeDocSection } from '@svc/testkit/dist/benchmarks-doc';
import { cpuSeconds, stopAll, waitReady } from '@svc/testkit/dist/processes';
import { BENCH_IDENTIFIER_HASH_KEYS, BENCH_RAW_LOG_MASTER_KEY, startBenchDatabase } from './bench-database';
import { batchBody, runLoad, type LoadResult } from './load';

/**
 * What an unauthenticated flood costs authenticated ingestion. One gateway
 * (Postgres-backed log) takes a steady authenticated load (closed loop,
 * batches of 100 ~1 KB events, 12 organisations over 10 loopback addresses)
 * in three kinds of step, interleaved round after round in turn:
 *
 *   quiet      the load alone
 *   throttled  the load beside a flood of 1 MiB bodies without a valid key
 *              from 10 other addresses, the gateway as it ships
 *              (UNAUTHENTICATED_PER_MINUTE 60)
 *   open       the same flood against a second gateway whose throttle never
 *              refuses (UNAUTHENTICATED_PER_MINUTE 1e9): what the flood
 *              would cost without it
 *
 * The flood: half to the Segment batch route with a made-up `writeKey` in
 * the body (each one a body read, a parse and a key lookup), half to
 * /v1-batch with a made-up Bearer key. Both gateways run at once, so each
 * step's neighbour is idle. Writes the table into docs/benchmarks.md.
 */
const knobs = loadConfigOrExit(
  {
    BENCH_STEP_MS: env.int({ description: 'Length of each measured step, ms', default: 10_000, min: 1 }),
    BENCH_ROUNDS: env.int({ description: 'Rounds of the three steps', default: 3, min: 1 }),
    BENCH_CONCURRENCY: env.int({ description: 'Authenticated requests in flight', default: 8, min: 1 }),
    BENCH_FLOOD_CONCURRENCY: env.int({ description: 'Flood requests in flight', default: 8, min: 1 }),
    BENCH_WRITE_DOC: env.bool({ description: 'Write the table into docs/benchmarks.md (false: print only)', default: true }),
  },
  process.env,
);

const SOURCE_IPS = Array.from({ length: 10 }, (_, i) => `127.0.0.${i + 1}`);
const FLOOD_IPS = Array.from({ length: 10 }, (_, i) => `127.0.0.${i + 101}`);
const GATEWAY_MAIN = path.resolve(__dirname, '../../../dist/main.js');
/** A 1 MiB body less a little: a whole batch of filler events, valid JSON; one buffer, written as it is by every request. */
const FLOOD_EVENTS = (() => {
  const event = JSON.stringify({ type: 'track', event: 'Flood', anonymousId: 'flood', properties: { pad: 'x'.repeat(900) } });
  const events: string[] = [];
  let size = 64;
  while (size + event.length + 1 < 1_040_000) {
    events.push(event);
    size += event.length + 1;
  }
  return Buffer.from(events.join(','));
})();

interface Step {
  kind: 'quiet' | 'throttled' | 'open';
  load: LoadResult;
  cpuUsPerEvent: number;
  flood: { requests: number; byStatus: Record<string, number> };
}

async function main(): Promise<void> {
  const database = await startBenchDatabase();
  const gateways: Record<'throttled' | 'open', { child: ChildProcess; url: string }> = {} as never;
  try {
    for (const [kind, perMinute] of [['throttled', '60'], ['open', '1000000000']] as const) {
      const port = await freePort();
      const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, GATEWAY_MAIN], {
        env: { DATABASE_URL: database.url, RAW_LOG_MASTER_KEY: BENCH_RAW_LOG_MASTER_KEY, IDENTIFIER_HASH_KEYS: BENCH_IDENTIFIER_HASH_KEYS, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', TOPIC_PREFIX: `flood${kind}${Date.now()}.`, UNAUTHENTICATED_PER_MINUTE: perMinute },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      gateways[kind] = { child, url: `http://127.0.0.1:${port}` };
      await waitReady(gateways[kind].url, child);
    }
    const runId = randomBytes(4).toString('hex');
    let label = 0;
    const keys = () => database.writeKeys(`flood-${runId}-${label++}`, 12);
    const step = async (kind: Step['kind']): Promise<Step> => {
      // quiet steps load the shipped gateway; the flood goes where the step says.
      const target = kind === 'open' ? gateways.open : gateways.throttled;
      const stepKeys = await keys();
      const cpu0 = cpuSeconds(target.child.pid);
      const flood = kind === 'quiet' ? undefined : startFlood(target.url, knobs.BENCH_FLOOD_CONCURRENCY);
      const load = await runLoad({
        urls: [`${target.url}/functions/v1/v1-batch`],
        keys: stepKeys,
        sourceIps: SOURCE_IPS,
        concurrency: knobs.BENCH_CONCURRENCY,
        durationMs: knobs.BENCH_STEP_MS,
        body: (seq) => batchBody(seq, `${runId}${label}`, 100),
      });
      const flooded = (await flood?.stop()) ?? { requests: 0, byStatus: {} };
      const cpu = cpuSeconds(target.child.pid) - cpu0;
      const result = { kind, load, cpuUsPerEvent: load.eventsAccepted > 0 ? (cpu * 1e6) / load.eventsAccepted : 0, flood: flooded };
      console.error(
        `${kind}: ${Math.round(load.eventsPerSecond)} events/s, p99 ${load.p99Ms.toFixed(1)} ms, non-200 ${load.non200}, ${result.cpuUsPerEvent.toFixed(1)} µs CPU/event; flood ${flooded.requests} requests ${JSON.stringify(flooded.byStatus)}`,
      );
      return result;
    };
    await step('quiet'); // warm-up, not counted
    const steps: Step[] = [];
    const orders: Array<Array<Step['kind']>> = [
      ['quiet', 'throttled', 'open'],
      ['open', 'quiet', 'throttled'],
      ['throttled', 'open', 'quiet'],
    ];
    for (let round = 0; round < knobs.BENCH_ROUNDS; round++) {
      for (const kind of orders[round % orders.length]!) steps.push(await step(kind));
    }
    const section = report(steps);
    if (knobs.BENCH_WRITE_DOC) await writeDocSection('benchmarks.md', 'gateway-flood', section);
    console.log(section);
  } finally {
    await stopAll(Object.values(gateways).map((g) => g.child));
    await database.stop();
  }
}

/** Keeps `concurrency` flood requests in flight until stopped; counts their answers by status. */
function startFlood(origin: string, concurrency: number): { stop: () => Promise<{ requests: number; byStatus: Record<string, number> }> } {
  const agents = FLOOD_IPS.map((localAddress) => new http.Agent({ keepAlive: true, localAddress }));
  const byStatus: Record<string, number> = {};
  let requests = 0;
  let stopped = false;
  const one = (n: number): Promise<void> =>
    new Promise((resolve) => {
      const segment = n % 2 === 0;
      const made = `uk_live_${randomBytes(20).toString('hex')}`;
      const head = Buffer.from(segment ? `{"writeKey":"${made}","batch":[` : '{"batch":[');
      const tail = Buffer.from(']}');
      const req = http.request(
        `${origin}/functions/v1/${segment ? 'segment/v1/batch' : 'v1-batch'}`,
        {
          method: 'POST',
          agent: agents[n % agents.length],
          headers: { 'content-type': 'application/json', 'content-length': head.length + FLOOD_EVENTS.length + tail.length, ...(segment ? {} : { authorization: `Bearer ${made}` }) },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            byStatus[res.statusCode ?? 0] = (byStatus[res.statusCode ?? 0] ?? 0) + 1;
            requests += 1;
            resolve();
          });
        },
      );
      // A refusal before the body is read ends the exchange early: not an error of the flood.
      req.on('error', () => {
        byStatus.reset = (byStatus.reset ?? 0) + 1;
        requests += 1;
        resolve();
      });
      // The generator's own cost stays small: the MiB is one shared buffer, never copied.
      req.write(head);
      req.write(FLOOD_EVENTS);
      req.end(tail);
    });
  let seq = 0;
  const workers = Array.from({ length: concurrency }, async () => {
    while (!stopped) await one(seq++);
  });
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(workers);
      for (const a of agents) a.destroy();
      return { requests, byStatus };
    },
  };
}

function report(steps: Step[]): string {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const of = (kind: Step['kind']) => steps.filter((s) => s.kind === kind);
  const quiet = median(of('quiet').map((s) => s.load.eventsPerSecond));
  const rows = (['quiet', 'throttled', 'open'] as const).map((kind) => {
    const s = of(kind);
    const eps = median(s.map((x) => x.load.eventsPerSecond));
    const flood = s.reduce((sum, x) => sum + x.flood.requests, 0);
    const statuses: Record<string, number> = {};
    for (const x of s) for (const [k, v] of Object.entries(x.flood.byStatus)) statuses[k] = (statuses[k] ?? 0) + v;
    const floodText = flood === 0 ? '—' : `${Math.round(flood / ((s.length * knobs.BENCH_STEP_MS) / 1000))}/s (${Object.entries(statuses).map(([k, v]) => `${k}: ${v}`).join(', ')})`;
    const non200 = s.reduce((sum, x) => sum + x.load.non200, 0);
    return [kind, Math.round(eps).toLocaleString('en'), (eps / quiet).toFixed(2), median(s.map((x) => x.load.p99Ms)).toFixed(0), median(s.map((x) => x.cpuUsPerEvent)).toFixed(0), String(non200), floodText];
  });
  return markdownTable(
    `_Measured ${new Date().toISOString().slice(0, 10)} by \`node bench/dist/bench/flood-bench.js\` (services/ingest-gateway), ${os.cpus().length} cores; one gateway on the Postgres-backed log (a 200 means the batch is committed to PostgreSQL), ` +
      `${knobs.BENCH_CONCURRENCY} authenticated requests of 100 events in flight, ${knobs.BENCH_FLOOD_CONCURRENCY} flood requests of 1 MiB without a valid key in flight, ${knobs.BENCH_ROUNDS} interleaved rounds of ${knobs.BENCH_STEP_MS / 1000} s steps; medians._`,
    ['step', 'authenticated events/s', 'of quiet', 'p99 ms', 'gateway CPU µs/event', 'authenticated non-200', 'flood answered (status: count)'],
    rows,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
