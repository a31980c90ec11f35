import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import path from 'node:path';
import { conversionsMigrations } from '@svc/conversions';
import { identityMigrations, privacyMigrations } from '@svc/identity';
import {
  createDb,
  createLogger,
  createMetrics,
  dropDatabase,
  ensureDatabase,
  env,
  loadConfigOrExit,
  runMigrations,
  serveHttp,
  startEmbeddedPostgres,
  type Db,
} from '@svc/runtime';
import { AccountsStore, FailedAuthThrottle, accountsMigrations, rateLimitMigrations } from '@svc/accounts';
import { markdownTable, writeDocSection } from '@svc/testkit/dist/benchmarks-doc';
import { bulkLoadIdentity } from '@svc/testkit/dist/bulk-load';
import { nameValues } from '@svc/testkit/dist/name-values';
import { cleanUpOnSignals } from '@svc/testkit/dist/processes';
import { CursorCodec } from '../src/cursor';
import { mountProfileApi } from '../src/routes-setup';

/**
 * Profiles API benchmark. Seeds 100,000 profiles (plus 2,000 merged away)
 * and 2,000,000 events with set-based SQL into a fresh database (an embedded
 * PostgreSQL in a temporary directory, or a fresh database on the server of
 * DATABASE_URL), after the real migrations, then drives the real API,
 * in-process on 127.0.0.1, at a fixed request rate per route (open loop:
 * latency runs from each request's scheduled start, so a stall is not hidden
 * by sending less) and prints p50/p99 as a markdown table, which it also
 * writes into docs/benchmarks.md.
 *
 * Every request carries its own X-Forwarded-For address (the server trusts
 * 127.0.0.1 as a proxy): the 60/min per (org, IP) limit is still checked on
 * every request, one counter upsert each, as for a crowd of clients.
 *
 * Floors (issue 18's targets): p99 < 10 ms for detail, identities, exact
 * search and a cursor page 10,000 events deep; < 25 ms for partial search. The process exits 1 when one is missed.
 *
 * Knobs: benchConfigSpec below.
 */
const benchConfigSpec = {
  BENCH_RATE: env.int({ description: 'Requests/s per route (10 and 20 for the two routes that scan thousands of rows per request)', default: 100, min: 1 }),
  BENCH_SECONDS: env.int({ description: 'Measured seconds per route', default: 15, min: 1 }),
  BENCH_DATA_DIR: env.optionalString({ description: 'Keep the embedded database here (and reuse it) instead of a temporary directory' }),
  DATABASE_URL: env.optionalString({ description: "A PostgreSQL superuser URL to create the bench's database on; default an embedded server" }),
  BENCH_PROFILES: env.int({ description: 'Live profiles seeded (2% more are seeded merged away)', default: 100_000, min: 1_000 }),
  BENCH_EVENTS: env.int({ description: 'Events seeded, spread over the profiles', default: 2_000_000, min: 200_000 }),
  BENCH_WRITE_DOC: env.bool({ description: 'Write the table into docs/benchmarks.md (false: print only)', default: true }),
  BENCH_RESULT_FILE: env.optionalString({ description: 'Also write the results as JSON here (the scale curve reads them)' }),
  BENCH_PG_SETTINGS: env.list({ description: 'name=value settings for the embedded PostgreSQL server over the bench\'s own (e.g. shared_buffers=6GB)', default: [] }),
  BENCH_ROUTES: env.list({ description: 'Measure only the routes whose name contains one of these (default every route)', default: [] }),
};
const knobs = loadConfigOrExit(benchConfigSpec, process.env);
const RATE = knobs.BENCH_RATE;
const SECONDS = knobs.BENCH_SECONDS;
const WARMUP_SECONDS = 2;
const PROFILES = knobs.BENCH_PROFILES;
const MERGED = Math.round(PROFILES / 50);
const EVENTS = knobs.BENCH_EVENTS;
/** Profiles 1..5 get 20,000 events each on top of their share: the deep-paging targets. */
const HEAVY = 5;
const HEAVY_EVENTS = 20_000;
const DEPTH = 10_000;
/** The p99 targets: a read by key or index, and a substring search over the trigram indexes. */
const FLOOR_MS = 10;
const PARTIAL_FLOOR_MS = 25;
/** Connections of the API's pool (as the standalone main's 10, plus two). */
const POOL = 12;
const SECRET = randomBytes(32).toString('hex');

interface Scenario {
  name: string;
  /** The p99 floor in ms, when there is one. */
  floor?: number;
  /** The status every request should get (default 200). */
  status?: number;
  /** Requests per second, when not BENCH_RATE (routes whose every request scans thousands of rows). */
  rate?: number;
  path: (i: number) => string;
}

interface Result {
  name: string;
  requests: number;
  rate: number;
  p50: number;
  p99: number;
  max: number;
  failures: number;
  /** The longest the process's event loop was held up during the measurement: the machine not running us. */
  stall: number;
  floor?: number | undefined;
}

async function main(): Promise<void> {
  const started = Date.now();
  const { url, stop } = await freshDatabase();
  // Stopped from outside (Ctrl-C, `timeout`): the database goes too (its directory, or the scratch database).
  const releaseSignals = cleanUpOnSignals(stop);
  const db = createDb({ url, poolMax: POOL, applicationName: 'profile-bench' });
  let server: Awaited<ReturnType<typeof serveHttp>> | undefined;
  try {
    await runMigrations(db, [accountsMigrations, rateLimitMigrations, conversionsMigrations, identityMigrations, privacyMigrations]);
    const accounts = new AccountsStore(db);
    // BENCH_DATA_DIR keeps the cluster: a second run finds the organisation seeded and skips the seed.
    const existing = (await db('accounts.organizations').where({ name: 'bench' }).first('id')) as { id: string } | undefined;
    if (existing) {
      const [row] = (await db('identity.events').where({ org_id: existing.id }).count({ n: '*' })) as Array<{ n: number }>;
      if (Number(row?.n) !== EVENTS) throw new Error('BENCH_DATA_DIR holds a partly seeded database; delete the directory and run again');
    }
    const orgId = existing?.id ?? (await accounts.createOrganization({ name: 'bench' })).id;
    const readKey = (await accounts.createApiKey({ orgId, type: 'read' })).key;
    const seedStarted = Date.now();
    if (!existing) await seed(db, orgId);
    const seedSeconds = existing ? 0 : (Date.now() - seedStarted) / 1000;
    log(existing ? 'reusing the seeded database in BENCH_DATA_DIR' : `seeded in ${seedSeconds.toFixed(1)} s`);

    await prewarm(db);
    const logger = createLogger({ name: 'profile-bench', level: 'warn' });
    server = await serveHttp({
      config: { HOST: '127.0.0.1', PORT: 0, TRUSTED_PROXIES: ['127.0.0.1'], TLS_CERT_FILE: undefined, TLS_KEY_FILE: undefined, REQUIRE_HTTPS: false },
      logger,
      metrics: createMetrics({ collectDefaultMetrics: false }),
      readiness: async () => ({ checks: {} }),
      mount: (router) => mountProfileApi(router, { db, logger, trustedProxies: ['127.0.0.1'], failedAuth: new FailedAuthThrottle(1_000_000), cursorSecret: SECRET }),
    });
    const base = `${server.url}/functions/v1/v1-profiles`;
    const scenarios = (await buildScenarios(db, orgId)).filter((s) => knobs.BENCH_ROUTES.length === 0 || knobs.BENCH_ROUTES.some((r) => s.name.includes(r)));
    const results: Result[] = [];
    const loadBefore = os.loadavg()[0]!;
    for (const s of scenarios) {
      // A warm pool, as on a server that has been serving: no connection set-up inside a measurement.
      await Promise.all(Array.from({ length: POOL }, () => db.raw('select pg_sleep(0.02)')));
      const r = await runAtFixedRate(base, readKey, s);
      log(`${s.name}: p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, max ${r.max.toFixed(1)} ms, stall ${r.stall.toFixed(0)} ms, failures ${r.failures}`);
      results.push(r);
    }
    const load = [loadBefore, os.loadavg()[0]!] as const;
    const section = table(results, seedSeconds, (Date.now() - started) / 1000, load);
    console.log(section);
    if (knobs.BENCH_WRITE_DOC) await writeDocSection('benchmarks.md', 'profile-bench', section);
    if (knobs.BENCH_RESULT_FILE) {
      const { rows } = (await db.raw('select pg_database_size(current_database())::float8 as bytes')) as { rows: Array<{ bytes: number }> };
      await writeFile(knobs.BENCH_RESULT_FILE, JSON.stringify({ profiles: PROFILES, events: EVENTS, databaseBytes: rows[0]!.bytes, results }));
    }
    const missed = results.filter((r) => r.floor !== undefined && (r.p99 >= r.floor || r.failures > 0));
    if (missed.length > 0) {
      log(`floor missed: ${missed.map((r) => r.name).join(', ')}`);
      process.exitCode = 1;
    }
  } finally {
    releaseSignals();
    await server?.close();
    await db.destroy();
    await stop();
  }
}

function log(line: string): void {
  process.stderr.write(`[profile-bench] ${line}\n`);
}

/** A fresh database: on DATABASE_URL's server when given, else an embedded server in a temporary directory. */
async function freshDatabase(): Promise<{ url: string; stop: () => Promise<void> }> {
  const name = `profile_bench_${randomBytes(4).toString('hex')}`;
  const adminUrl = knobs.DATABASE_URL;
  if (adminUrl) {
    await ensureDatabase(adminUrl, name);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    return { url: url.toString(), stop: () => dropDatabase(adminUrl, name) };
  }
  const keep = knobs.BENCH_DATA_DIR;
  const dataDir = keep ? path.resolve(keep) : await mkdtemp(path.join(os.tmpdir(), 'svc-bench-profiles-'));
  const server = await startEmbeddedPostgres({
    dataDir,
    database: keep ? 'profile_bench' : name,
    // Throwaway data: durability off; memory for the index builds (shared buffers and WAL as the embedded server sizes them).
    settings: {
      fsync: 'off',
      synchronous_commit: 'off',
      full_page_writes: 'off',
      maintenance_work_mem: '1GB',
      work_mem: '32MB',
      checkpoint_timeout: '30min',
      // Nothing else writes here; an auto-analyze during the load would only hold the vacuum horizon back.
      autovacuum: 'off',
      ...nameValues(knobs.BENCH_PG_SETTINGS),
    },
  });
  return {
    url: server.url,
    stop: async () => {
      await server.stop();
      if (!keep) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Set-based seed. Profile n has id md5('p'||n)::uuid; identified when n % 5 < 2
 * (user id `user-<n>`, email `user<n>@example.com`); every tenth has a phone;
 * every third a fingerprint; every fourth a click ID. Events are spread evenly
 * over all profiles, newest first by number, one second apart; profiles 1..5
 * get 20,000 more. The read indexes are dropped for the load and rebuilt after
 * (as a bulk load would), then the tables are vacuumed and analysed.
 */
async function seed(db: Db, orgId: string): Promise<void> {
  const step = async (what: string, sql: string, bindings: Array<string | number> = []) => {
    const t = Date.now();
    await db.raw(sql, bindings);
    log(`  ${what}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
  };
  const t0 = "(timestamptz '2026-11-20 00:00:00+00')";
  const pid = (n: string) => `md5('p' || ${n})::uuid`;
  await bulkLoadIdentity(db, async () => {
    await step(
      'profiles',
      `insert into identity.profiles (id, org_id, canonical_id, user_id, first_seen_at, last_seen_at, event_count, session_count,
                                      engagement_score, first_touch, last_touch, created_at)
       select ${pid('n')}, ?, 'prf_' || substr(md5('c' || n), 1, 26), case when n % 5 < 2 then 'user-' || n end,
              ${t0}, ${t0}, 0, 1 + n % 7, (n % 1000) / 10.0,
              jsonb_build_object('source', 'google', 'medium', 'cpc', 'campaign', 'c' || n % 50, 'at', ${t0} - interval '30 days'),
              jsonb_build_object('source', 'newsletter', 'medium', 'email', 'campaign', 'n' || n % 20, 'at', ${t0}),
              ${t0} - n * interval '1 minute'
       from generate_series(1, ?::int) n`,
      [orgId, PROFILES + MERGED],
    );
    await step(
      'merged profiles',
      `update identity.profiles set merged_into = ${pid('(n - ' + PROFILES + ')')}
       from generate_series(?::int, ?::int) n where id = ${pid('n')}`,
      [PROFILES + 1, PROFILES + MERGED],
    );
    await step(
      'identity signals',
      `insert into identity.identity_signals (org_id, signal_type, signal_value, profile_id, confidence, first_seen_at, last_seen_at, occurrence_count)
       select ?, t.type, t.value, ${pid('n')}, t.confidence, ${t0} - interval '20 days', ${t0}, 1 + n % 9
       from generate_series(1, ?::int) n
       cross join lateral (values
         ('anonymous_id', 'anon-' || n, 0.6::real, true),
         ('user_id', 'user-' || n, 1::real, n % 5 < 2),
         ('email', 'user' || n || '@example.com', 0.9::real, n % 5 < 2),
         ('phone', '+9198' || lpad(n::text, 8, '0'), 0.8::real, n % 10 = 0)
       ) as t (type, value, confidence, present)
       where t.present`,
      [orgId, PROFILES],
    );
    await step(
      'fingerprints and click IDs',
      `with f as (
         insert into identity.fingerprints (org_id, profile_id, fingerprint_hash, stability_score, first_seen_at, last_seen_at, occurrence_count)
         select ?, ${pid('n')}, md5('f' || n), 1, ${t0} - interval '10 days', ${t0}, 3 from generate_series(3, ?::int, 3) n
         returning 1
       )
       insert into identity.click_ids (org_id, click_type, click_id, profile_id, campaign_source, campaign_medium, first_seen_at, last_seen_at)
       select ?, 'gclid', 'gclid-' || n, ${pid('n')}, 'google', 'cpc', ${t0} - interval '9 days', ${t0} from generate_series(4, ?::int, 4) n`,
      [orgId, PROFILES, orgId, PROFILES],
    );
    const eventsSql = `insert into identity.events (id, org_id, message_id, profile_id, event_name, event_timestamp, received_at,
                                    properties, context, anonymous_id, user_id, resolution_method)
       select md5('e' || g)::uuid, ?, 'm' || g, ${pid('p')},
              (array['$pageview', 'viewed', 'purchase', 'signup'])[1 + g % 4],
              ${t0} - g * interval '1 second', ${t0} - g * interval '1 second' + interval '150 milliseconds',
              jsonb_build_object('i', g, 'sku', 'SKU-' || g % 500, 'price', (g % 10000) / 100.0),
              jsonb_build_object('page', jsonb_build_object('path', '/p/' || g % 100, 'title', 'Page ' || g % 100),
                                 'library', jsonb_build_object('name', 'svc-browser', 'version', '1.5.0'), 'ip_address', '203.0.113.7'),
              'anon-' || p, null, 'anonymous_id'
       from generate_series(?::int, ?::int) g
       cross join lateral (select case when g <= ?::int then 1 + (g - 1) % ?::int else 1 + (g - 1) % ?::int end as p) x`;
    // One slice per core, on connections of their own.
    const slices = Math.max(1, Math.min(4, os.cpus().length));
    const per = Math.ceil(EVENTS / slices);
    const t = Date.now();
    await Promise.all(
      Array.from({ length: slices }, (_, k) =>
        db.raw(eventsSql, [orgId, k * per + 1, Math.min(EVENTS, (k + 1) * per), HEAVY * HEAVY_EVENTS, HEAVY, PROFILES]),
      ),
    );
    log(`  events: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    await step(
      'profile counters',
      `update identity.profiles p set event_count = c.n, first_seen_at = c.first, last_seen_at = c.last
       from (select profile_id, count(*) as n, min(event_timestamp) as first, max(event_timestamp) as last
             from identity.events group by profile_id) c
       where p.id = c.profile_id`,
    );
  }, log);
}

/**
 * Loads what the measured reads touch into shared buffers (pg_prewarm), as
 * on a server that has been serving them: every identity table and index but
 * the events heap and its primary key. Skipped where the extension is
 * not available.
 */
async function prewarm(db: Db): Promise<void> {
  try {
    await db.raw('create extension if not exists pg_prewarm');
  } catch {
    log('pg_prewarm not available: measuring from a cold cache');
    return;
  }
  const t = Date.now();
  const { rows } = (await db.raw(
    `select c.oid::regclass::text as rel from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname in ('identity', 'accounts') and c.relkind in ('r', 'i')
       and c.relname not in ('events', 'events_pkey')`,
  )) as { rows: Array<{ rel: string }> };
  for (const r of rows) await db.raw('select pg_prewarm(?::regclass)', [r.rel]);
  log(`prewarmed ${rows.length} relations in ${((Date.now() - t) / 1000).toFixed(1)} s`);
}

/** The routes measured, each with a request path per sequence number (random targets, fixed seed). */
async function buildScenarios(db: Db, orgId: string): Promise<Scenario[]> {
  let state = 42;
  const rand = (n: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % n;
  };
  const { rows: targets } = (await db.raw(
    `select n, md5('p' || n)::uuid as id, 'prf_' || substr(md5('c' || n), 1, 26) as canonical from generate_series(1, ?::int) n order by n`,
    [PROFILES],
  )) as {
    rows: Array<{ n: number; id: string; canonical: string }>;
  };
  const identified = targets.filter((t) => t.n % 5 < 2 && t.n > PROFILES / 10);
  const any = () => targets[rand(targets.length)]!;
  const known = () => identified[rand(identified.length)]!;
  // Cursors 10,000 events deep into each heavy profile, issued as the API would (same key).
  const codec = new CursorCodec(SECRET);
  const deep: string[] = [];
  for (const t of targets.slice(0, HEAVY)) {
    const { rows } = (await db.raw(
      `select id, ((extract(epoch from event_timestamp) * 1000000)::bigint)::text as micros from identity.events
       where org_id = ? and profile_id = ? order by event_timestamp desc, id desc offset ?::int limit 1`,
      [orgId, t.id, DEPTH - 1],
    )) as { rows: Array<{ id: string; micros: string }> };
    const row = rows[0];
    if (!row) throw new Error(`profile ${t.n} has fewer than ${DEPTH} events`);
    deep.push(codec.encode(orgId, undefined, { profileId: t.id, micros: row.micros, id: row.id }));
  }
  return [
    // The machine's own floor: the same HTTP stack and client, no authentication, no database.
    { name: 'baseline: unmatched route (404, no database)', status: 404, path: () => '/no/such/route' },
    { name: 'GET /v1-profiles/:id (detail)', floor: FLOOR_MS, path: () => `/${any().id}` },
    { name: 'GET /v1-profiles/:id (detail by canonical_id)', path: () => `/${any().canonical}` },
    { name: 'GET /v1-profiles/:id/identities', floor: FLOOR_MS, path: () => `/${any().id}/identities` },
    { name: 'GET /v1-profiles/search?email= (exact)', floor: FLOOR_MS, path: () => `/search?email=USER${known().n}@Example.com` },
    { name: 'GET /v1-profiles/search?q= (exact)', floor: FLOOR_MS, path: () => `/search?q=user-${known().n}` },
    { name: 'GET /v1-profiles/search?q=&partial=true', floor: PARTIAL_FLOOR_MS, path: () => `/search?q=${known().n}%40exam&partial=true` },
    { name: `GET /v1-profiles/:id/events?cursor= (${DEPTH.toLocaleString('en')} deep, limit 50)`, floor: FLOOR_MS, path: (i) => `/${targets[i % HEAVY]!.id}/events?limit=50&cursor=${deep[i % HEAVY]!}` },
    { name: `GET /v1-profiles/:id/events?offset=${DEPTH} (legacy, exact total)`, rate: 10, path: (i) => `/${targets[i % HEAVY]!.id}/events?limit=50&offset=${DEPTH}` },
    { name: 'GET /v1-profiles/:id/events (first page, exact total)', path: () => `/${any().id}/events` },
    { name: 'GET /v1-profiles (list, first page, exact total)', rate: 20, path: () => '?limit=50' },
  ];
}

/** Open loop: request k is due at start + k / RATE; its latency runs from then to the end of its response. */
async function runAtFixedRate(base: string, key: string, s: Scenario): Promise<Result> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  let ip = 0;
  const one = async (seq: number, due: number, latencies: number[] | undefined): Promise<boolean> => {
    ip++;
    const res = await get(`${base}${s.path(seq)}`, agent, key, `10.${(ip >> 16) & 255}.${(ip >> 8) & 255}.${ip & 255}`);
    latencies?.push(performance.now() - due);
    return res === (s.status ?? 200);
  };
  const rate = s.rate ?? RATE;
  const phase = async (seconds: number, latencies: number[] | undefined, offset: number) => {
    const total = Math.round(seconds * rate);
    const start = performance.now();
    const inflight: Array<Promise<boolean>> = [];
    for (let k = 0; k < total; k++) {
      const due = start + (k * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      inflight.push(one(offset + k, due, latencies));
    }
    return Promise.all(inflight);
  };
  await phase(WARMUP_SECONDS, undefined, 1_000_000);
  const latencies: number[] = [];
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const outcomes = await phase(SECONDS, latencies, 0);
  loop.disable();
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] ?? 0;
  return {
    name: s.name,
    requests: latencies.length,
    rate,
    p50: pct(50),
    p99: pct(99),
    max: latencies.at(-1) ?? 0,
    failures: outcomes.filter((ok) => !ok).length,
    stall: loop.max / 1e6,
    floor: s.floor,
  };
}

function get(url: string, agent: http.Agent, key: string, ip: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': ip } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

function table(results: Result[], seedSeconds: number, totalSeconds: number, load: readonly [number, number]): string {
  const rows = results.map((r) => {
    const verdict = r.floor === undefined ? '' : r.p99 < r.floor && r.failures === 0 ? `< ${r.floor} ✓` : `< ${r.floor} ✗`;
    return [r.name, String(r.requests), String(r.rate), r.p50.toFixed(2), r.p99.toFixed(2), r.max.toFixed(1), r.stall.toFixed(0), String(r.failures), verdict];
  });
  return markdownTable(
    `_Measured ${new Date().toISOString().slice(0, 10)} by \`npm run bench\` (services/profile-api), ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ` +
      `PostgreSQL ${knobs.DATABASE_URL ? 'from DATABASE_URL' : 'embedded'}; ${PROFILES.toLocaleString('en')} live profiles (+${MERGED.toLocaleString('en')} merged away), ` +
      `${EVENTS.toLocaleString('en')} events seeded in ${seedSeconds.toFixed(0)} s; API in-process on 127.0.0.1, ${SECONDS} s per route at a fixed rate ` +
      `(after ${WARMUP_SECONDS} s warm-up), latency from each request's scheduled start; whole run ${Math.round(totalSeconds)} s; ` +
      `1-minute load average ${load[0].toFixed(1)} before and ${load[1].toFixed(1)} after the measurements (the load generator, the API and PostgreSQL share the machine). ` +
      `"Longest event-loop stall" is how long the process once went without running (monitorEventLoopDelay): a p99 near it was set by the machine, not by the route; ` +
      `the baseline row is the same HTTP stack with no authentication and no database._`,
    ['route', 'requests', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'longest event-loop stall ms', 'unexpected status', 'p99 floor'],
    rows,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
