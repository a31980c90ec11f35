import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { env, loadConfigOrExit, sizedForMachine } from '@svc/runtime';
// Modules alone: the package's index loads jest's globals, which refuse to run outside jest.
import { writeDocSection } from '@svc/testkit/dist/benchmarks-doc';
import { nameValues } from '@svc/testkit/dist/name-values';
import { cleanUpOnSignals } from '@svc/testkit/dist/processes';

/**
 * The cost curve as the data grows (issue 31, target 4): at each point
 * (stored events, profiles) the pipeline bench and the Profiles API bench
 * run on a database bulk-loaded to that size, and this puts their figures
 * side by side, each relative to the first point, as a table and a plot
 * (docs/scale-curve.svg) in docs/benchmarks.md.
 *
 * Pipeline: the Postgres-backed log, the ingest gateway and the identity
 * resolver apart, both traffic shapes at 5,000 events/s; CPU per stored
 * event counts every process (gateway, resolver, PostgreSQL). API: p99 of
 * a profile's detail, a cursor page 10,000 events deep, exact search by
 * email and partial search, at the Profiles API bench's fixed rates.
 *
 * Both benches run as processes of their own, one after the other (never
 * two at a time on this machine), each with a fresh database of the point's
 * size, on the embedded server as `npm start` runs it (memory and WAL sized
 * for the machine: sizedForMachine), the same at every point so the curve
 * shows the data, not the settings. The pipeline's server keeps the default
 * durability; the API bench's runs without fsync (reads only) as it always
 * does.
 */
const spec = {
  BENCH_SCALE_POINTS: env.list({
    description:
      'Points as events/profiles, smallest first. The pipeline\'s database takes about 0.9 KB of disk per stored event (the API bench\'s about 0.8, one at a time): 50000000/1000000 needs about 50 GB free',
    default: ['1000000/100000', '10000000/100000', '10000000/1000000'],
  }),
  BENCH_SCALE_DURATION_MS: env.int({ description: "The pipeline's measured window per traffic shape, ms", default: 60_000, min: 1_000 }),
  BENCH_SCALE_API_SECONDS: env.int({ description: 'Measured seconds per Profiles API route', default: 15, min: 1 }),
  BENCH_SCALE_PG_SETTINGS: env.list({
    description: 'name=value settings for both benches\' PostgreSQL servers over the embedded default (which sizes memory and WAL for the machine)',
    default: [],
  }),
  BENCH_WRITE_DOC: env.bool({ description: 'Write the table into docs/benchmarks.md and the plot into docs/scale-curve.svg (false: print only)', default: true }),
};
const knobs = loadConfigOrExit(spec, process.env);
const SETTINGS = nameValues(knobs.BENCH_SCALE_PG_SETTINGS);

/** The repository, from services/standalone/bench/dist/bench. */
const ROOT = path.resolve(__dirname, '../../../../..');
const PIPELINE = path.join(__dirname, 'pipeline-bench.js');
const PROFILES_API = path.join(ROOT, 'services/profile-api/bench/dist/bench/profile-bench.js');
const DOCS = path.join(ROOT, 'docs');
/** The Profiles API routes of the curve, by a part of their names in profile-bench.ts. */
const API_ROUTES = [
  { key: '(detail)', label: 'detail' },
  { key: 'cursor=', label: 'events 10,000 deep' },
  { key: 'search?email=', label: 'exact search' },
  { key: 'partial=true', label: 'partial search' },
] as const;
const SHAPES = ['collector', 'sessions'] as const;
const FLAT = 0.2;

interface Point {
  events: number;
  profiles: number;
}

interface PointResult extends Point {
  /** CPU µs per stored event, all processes, and lag p99 ms, per traffic shape; database bytes after the pipeline run. */
  pipeline: Record<(typeof SHAPES)[number], { cpuPerEvent: number; lagP99: number; stored: number; walKbPerEvent: number | undefined } | undefined>;
  pipelineBytes: number;
  /** p99 ms per API route; the API bench's database bytes. */
  api: Record<string, number | undefined>;
  apiBytes: number;
}

const log = (line: string): void => void process.stderr.write(`[scale-bench] ${line}\n`);

async function main(): Promise<void> {
  const started = Date.now();
  const points: Point[] = knobs.BENCH_SCALE_POINTS.map((p) => {
    const [events, profiles] = p.split('/').map(Number);
    if (!Number.isInteger(events) || !Number.isInteger(profiles)) throw new Error(`BENCH_SCALE_POINTS: "${p}" is not events/profiles`);
    return { events: events!, profiles: profiles! };
  });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-scale-bench-'));
  const results: PointResult[] = [];
  try {
    for (const point of points) {
      log(`point: ${point.events.toLocaleString('en')} events, ${point.profiles.toLocaleString('en')} profiles`);
      results.push(await measure(point, dir));
      const section = render(results, (Date.now() - started) / 1000);
      console.log(section);
      // Written after every point: a long run that stops half-way still leaves what it measured.
      if (knobs.BENCH_WRITE_DOC) {
        await writeDocSection('benchmarks.md', 'scale-bench', section);
        await writeFile(path.join(DOCS, 'scale-curve.svg'), plot(results));
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function measure(point: Point, dir: string): Promise<PointResult> {
  const pipelineFile = path.join(dir, 'pipeline.json');
  await run(PIPELINE, {
    BENCH_TIERS: 'postgres',
    BENCH_TOPOLOGY: 'services',
    BENCH_SHAPES: SHAPES.join(','),
    BENCH_RATES: '5000',
    BENCH_DURATION_MS: String(knobs.BENCH_SCALE_DURATION_MS),
    BENCH_PROFILES: String(point.profiles),
    BENCH_HISTORY_EVENTS: String(point.events),
    BENCH_PG_SETTINGS: knobs.BENCH_SCALE_PG_SETTINGS.join(','),
    BENCH_WRITE_DOC: 'false',
    BENCH_RESULT_FILE: pipelineFile,
  });
  const apiFile = path.join(dir, 'api.json');
  await run(PROFILES_API, {
    BENCH_PROFILES: String(point.profiles),
    BENCH_EVENTS: String(point.events),
    BENCH_SECONDS: String(knobs.BENCH_SCALE_API_SECONDS),
    BENCH_ROUTES: API_ROUTES.map((r) => r.key).join(','),
    BENCH_PG_SETTINGS: knobs.BENCH_SCALE_PG_SETTINGS.join(','),
    BENCH_WRITE_DOC: 'false',
    BENCH_RESULT_FILE: apiFile,
  });
  const pipeline = JSON.parse(await readFile(pipelineFile, 'utf8')) as {
    results: Array<{
      tier: string;
      storedPerSecond?: number;
      lag?: { p99: number };
      cpu?: { stack: number; postgres: number };
      wal?: { bytesPerEvent: number };
      databaseBytes?: number;
    }>;
  };
  const api = JSON.parse(await readFile(apiFile, 'utf8')) as { databaseBytes: number; results: Array<{ name: string; p99: number; failures: number }> };
  const byShape = Object.fromEntries(
    SHAPES.map((shape) => {
      const r = pipeline.results.find((t) => t.tier.endsWith(shape));
      if (!r?.cpu || !r.storedPerSecond || !r.lag) return [shape, undefined];
      const cpuPerEvent = ((r.cpu.stack + r.cpu.postgres) * 1e6) / r.storedPerSecond;
      return [shape, { cpuPerEvent, lagP99: r.lag.p99, stored: r.storedPerSecond, walKbPerEvent: r.wal && r.wal.bytesPerEvent / 1024 }];
    }),
  ) as PointResult['pipeline'];
  return {
    ...point,
    pipeline: byShape,
    pipelineBytes: Math.max(0, ...pipeline.results.map((r) => r.databaseBytes ?? 0)),
    api: Object.fromEntries(API_ROUTES.map((route) => [route.label, api.results.find((r) => r.name.includes(route.key) && r.failures === 0)?.p99])),
    apiBytes: api.databaseBytes,
  };
}

/** Runs one bench to its end; its output goes to ours. A bench that exits non-zero for a missed floor still wrote its results. */
function run(script: string, extra: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], { env: { ...process.env, ...extra }, stdio: ['ignore', 'ignore', 'inherit'] });
    // Stopped from outside: the bench running now is told to stop too, and cleans up its database itself.
    const releaseSignals = cleanUpOnSignals(async () => {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      releaseSignals();
      if (code === 0 || code === 1) resolve();
      else reject(new Error(`${path.basename(script)} ended with ${signal ?? code}`));
    });
  });
}

const fmtInt = (n: number): string => Math.round(n).toLocaleString('en');
const fmtSize = (bytes: number): string => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
const millions = (n: number): string => (n >= 1e6 ? `${n / 1e6}M` : `${n / 1e3}k`);

/** Every figure of the curve, by name: lower is better for all of them. */
function series(results: readonly PointResult[]): Array<{ name: string; values: Array<number | undefined> }> {
  return [
    ...SHAPES.map((shape) => ({ name: `pipeline CPU µs/event, ${shape}`, values: results.map((r) => r.pipeline[shape]?.cpuPerEvent) })),
    ...API_ROUTES.map((route) => ({ name: `API p99, ${route.label}`, values: results.map((r) => r.api[route.label]) })),
  ];
}

/** The last point over the first, and whether every point stays within FLAT of the first. */
function flatness(values: ReadonlyArray<number | undefined>): string {
  const first = values[0];
  if (first === undefined || values.some((v) => v === undefined)) return '–';
  const worst = Math.max(...values.map((v) => v! / first));
  return `${worst.toFixed(2)}× ${worst <= 1 + FLAT ? '✓' : '✗'}`;
}

function render(results: readonly PointResult[], runSeconds: number): string {
  const all = series(results);
  const cell = (v: number | undefined, digits = 0) => (v === undefined ? '–' : v.toFixed(digits));
  return [
    `_Measured ${new Date().toISOString().slice(0, 10)} by \`npm run bench:scale\` (services/standalone), ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB. ` +
      `At each point a fresh database is bulk-loaded with that many stored events and profiles (read indexes built after the load, tables vacuumed), then measured: ` +
      `the pipeline (Postgres-backed log, gateway and resolver apart, 5,000 events/s offered for ${knobs.BENCH_SCALE_DURATION_MS / 1000} s per traffic shape, default durability; ` +
      `CPU of the gateway, the resolver and PostgreSQL per stored event) and the Profiles API (p99 at the Profiles API bench's fixed rates, ${knobs.BENCH_SCALE_API_SECONDS} s per route). ` +
      `PostgreSQL embedded, sized for the machine (${Object.entries({ ...sizedForMachine(), ...SETTINGS }).map(([k, v]) => `${k} ${v}`).join(', ')}). ` +
      `"worst vs first" is the largest figure over the first point's: flat means within ${FLAT * 100}%. Whole run ${Math.round(runSeconds / 60)} min. The plot: docs/scale-curve.svg._`,
    '',
    `| stored events | profiles | disk (pipeline / API database) | ${all.map((s) => s.name).join(' | ')} | lag p99 ms (collector / sessions) | WAL KB per stored event (collector / sessions) |`,
    `|---|---|---|${all.map(() => '---|').join('')}---|---|`,
    ...results.map(
      (r, i) =>
        `| ${fmtInt(r.events)} | ${fmtInt(r.profiles)} | ${fmtSize(r.pipelineBytes)} / ${fmtSize(r.apiBytes)} | ${all.map((s) => cell(s.values[i], s.name.startsWith('API') ? 1 : 0)).join(' | ')} | ` +
        `${SHAPES.map((shape) => cell(r.pipeline[shape]?.lagP99)).join(' / ')} | ${SHAPES.map((shape) => cell(r.pipeline[shape]?.walKbPerEvent, 1)).join(' / ')} |`,
    ),
    `| worst vs first | | | ${all.map((s) => flatness(s.values)).join(' | ')} | | |`,
    '',
  ].join('\n');
}

/** A line per figure, each relative to its first point, over the points in order; the band is "flat". */
function plot(results: readonly PointResult[]): string {
  // The canvas, and the margins around the plotting area (the legend sits in the right one).
  const [W, H] = [760, 420];
  const { left, right, top, bottom } = { left: 60, right: 250, top: 30, bottom: 60 };
  const all = series(results);
  const ratios = all.map((s) => s.values.map((v) => (v === undefined || s.values[0] === undefined ? undefined : v / s.values[0])));
  // A log scale: a figure twice the first is as far above the line as one half of it is below.
  const yMax = Math.max(2, ...ratios.flat().filter((v): v is number => v !== undefined)) * 1.1;
  const yMin = Math.min(0.5, ...ratios.flat().filter((v): v is number => v !== undefined)) / 1.1;
  const x = (i: number) => left + (results.length === 1 ? 0 : (i * (W - left - right)) / (results.length - 1));
  const y = (v: number) => top + ((Math.log(yMax) - Math.log(v)) * (H - top - bottom)) / (Math.log(yMax) - Math.log(yMin));
  const colours = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b'];
  const lines = ratios.map((values, k) => {
    const pts = values.flatMap((v, i) => (v === undefined ? [] : [`${x(i).toFixed(1)},${y(v).toFixed(1)}`]));
    return `<polyline fill="none" stroke="${colours[k % colours.length]}" stroke-width="2" points="${pts.join(' ')}"/>`;
  });
  const ticks = [0.5, 0.8, 1, 1.2, 2, 5, 10, 20, 50].filter((v) => v >= yMin && v <= yMax);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${left}" y="18" font-size="14">Cost as the data grows, relative to the first point (lower is better; band: within ${FLAT * 100}%)</text>`,
    `<rect x="${left}" y="${y(1 + FLAT)}" width="${W - left - right}" height="${y(1 - FLAT) - y(1 + FLAT)}" fill="#e8f4e8"/>`,
    ...ticks.map((v) => `<line x1="${left}" x2="${W - right}" y1="${y(v)}" y2="${y(v)}" stroke="#ccc"/><text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(2)}×</text>`),
    ...results.map(
      (r, i) =>
        `<text x="${x(i)}" y="${H - bottom + 18}" text-anchor="middle">${millions(r.events)} events</text><text x="${x(i)}" y="${H - bottom + 34}" text-anchor="middle">${millions(r.profiles)} profiles</text>`,
    ),
    ...lines,
    ...all.map(
      (s, k) =>
        `<line x1="${W - right + 15}" x2="${W - right + 35}" y1="${top + 10 + k * 20}" y2="${top + 10 + k * 20}" stroke="${colours[k % colours.length]}" stroke-width="2"/><text x="${W - right + 40}" y="${top + 14 + k * 20}">${s.name}</text>`,
    ),
    '</svg>',
    '',
  ].join('\n');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
