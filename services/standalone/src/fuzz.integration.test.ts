/**
 * The fuzz suite (issue 15): generated requests, most of them mutated but
 * plausible, some plainly hostile, posted to every route of the real stack
 * (real PostgreSQL, on both bus tiers). Properties: every answer is a 2xx
 * or 4xx with the spec's envelope and headers, as the OpenAPI document says, never a raw database or
 * library message; every event a 200 acknowledged is stored exactly once;
 * an organisation nobody sent as is untouched; Object.prototype is clean.
 *
 * `npm test` runs a fixed seed and a bounded count (FUZZ_REQUESTS, default
 * 400 per tier); `npm run fuzz` runs 100,000 and writes its figures to
 * docs/fuzz.md.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeWithKafka, describeWithPostgres, testLogger, writeDocSection } from '@svc/testkit';
import { runFuzz, type FuzzReport } from './test-support/fuzz/fuzz';
import { organisationSnapshot, startFuzzStack, waitUntilStored, type FuzzStack, type Tier } from './test-support/fuzz/fuzz-stack';

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 400);
const SEED = Number(process.env.FUZZ_SEED ?? 15);
const MAX_MS = Number(process.env.FUZZ_MAX_SECONDS ?? 120) * 1000;
const LONG_RUN = process.env.FUZZ_REQUESTS !== undefined;

const reports: Array<[Tier, FuzzReport]> = [];

function fuzzSuite(tier: Tier): void {
  let stack: FuzzStack;
  let report: FuzzReport;
  const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort();

  beforeAll(async () => {
    stack = await startFuzzStack(tier, testLogger(`fuzz-${tier}`));
  }, 120_000);
  afterAll(async () => stack?.stop(), 60_000);

  it(
    `answers every generated request with a 2xx or 4xx envelope, never a 5xx or raw error text (${REQUESTS} requests, seed ${SEED})`,
    async () => {
      const before = await organisationSnapshot(stack.db, stack.bystander.orgId);
      report = await runFuzz(stack.port, stack.targets, { requests: REQUESTS, seed: SEED, maxMs: MAX_MS, concurrency: 4 });
      reports.push([tier, report]);
      expect(report.violations.slice(0, 5)).toEqual([]);
      expect(report.serverErrors).toBe(0);
      expect(report.leaks).toBe(0);
      // It reached the code behind the front door: events were accepted, and each route was tried.
      expect(report.byStatus['200'] ?? 0).toBeGreaterThan(report.requests / 10);
      for (const kind of ['batch', 'consent', 'profiles', 'merge'] as const) expect(report.byKind[kind]).toBeGreaterThan(0);

      // Nobody sent as the bystander, and no id of its profiles could be read or merged.
      expect(await organisationSnapshot(stack.db, stack.bystander.orgId)).toEqual(before);
      expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeys);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    },
    MAX_MS + 60_000,
  );

  it('stores every event a 200 acknowledged, exactly once', async () => {
    expect(report).toBeDefined();
    for (const target of stack.targets) {
      const acknowledged = report.acknowledged.get(target.orgId) ?? new Set<string>();
      expect(acknowledged.size).toBeGreaterThan(0);
      // Each (organisation, messageId) is stored at most once by the unique key; all of them must be there.
      expect(await waitUntilStored(stack.db, target.orgId, acknowledged, 90_000)).toBe(acknowledged.size);
    }
  }, 120_000);
}

describeWithPostgres('fuzz: every route of the real stack, Postgres-backed log', () => fuzzSuite('postgres-log'));
describeWithKafka('fuzz: every route of the real stack, Kafka', () => fuzzSuite('kafka'));

afterAll(async () => {
  if (!LONG_RUN || reports.length === 0) return;
  await writeDocSection('fuzz.md', 'fuzz-run', `${reportTable(reports)}\n`);
});

function reportTable(rows: ReadonlyArray<[Tier, FuzzReport]>): string {
  const statuses = [...new Set(rows.flatMap(([, r]) => Object.keys(r.byStatus)))].sort();
  const lines = [
    `Seed ${SEED}, ${new Date().toISOString().slice(0, 10)}; \`FUZZ_REQUESTS=${REQUESTS} npm run fuzz\`.`,
    '',
    `| tier | requests | seconds | ${statuses.join(' | ')} | 5xx | leaks | violations | events acknowledged (all stored once) |`,
    `|---|---|---|${statuses.map(() => '---').join('|')}|---|---|---|---|`,
    ...rows.map(
      ([tier, r]) =>
        `| ${tier} | ${r.requests} | ${r.seconds.toFixed(0)} | ${statuses.map((s) => r.byStatus[s] ?? 0).join(' | ')} | ${r.serverErrors} | ${r.leaks} | ${r.violations.length} | ${[...r.acknowledged.values()].reduce((n, s) => n + s.size, 0)} |`,
    ),
  ];
  return lines.join('\n');
}
