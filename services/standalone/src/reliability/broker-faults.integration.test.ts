/**
 * Issue 28, "lose nothing when a broker dies": the services run as their own
 * processes (one gateway, three identity resolvers, two conversion
 * forwarders) over a real three-broker Kafka cluster (infra/local
 * kafka-cluster.sh; topics with 3 replicas and min.insync.replicas 2, the
 * producer idempotent with acks=all). Under steady load, a broker is killed,
 * the three are restarted one by one, two are taken down at once, and a
 * resolver is killed; after each, every event a 200 acknowledged must be
 * stored exactly once and counted once in the monthly usage, with no 500,
 * no request left hanging, and requests acknowledged again by the end with
 * nothing done to the services. With RELIABILITY_WRITE_DOC=1 the figures go
 * to docs/reliability.md (`npm run reliability`), passed or not.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { busConfigSpec, createBus, prefixedTopics } from '@svc/bus';
import { loadConfig, runMigrations } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { allMigrations } from '../migrations';
import { NODES, startCluster, type Cluster, type Node } from './cluster';
import { acknowledgedBy, createTestDatabase, describeWithKafka, kafkaEndpoints, longestGapWithoutOk, startLoad, unacknowledgedAnswers, within, type LoadResult, type LoadRun, type RequestRecord, type TestDatabase } from '@svc/testkit';
import { startServiceProcess, startServiceProcesses, waitAllReady, type ServiceProcess } from '../test-support/service-processes';
import { reportSection, writeReport, type ScenarioFigures } from './report';
import { lagSeries, lookInLog, maxLag, recoverySeconds, startStoredSampler, storedIds, verifyStored, type Verification } from './verify';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/** The load of every scenario: 4 clients, batches of 50, 1,000 events/s unless told otherwise. */
const CLIENTS = num('RELIABILITY_CLIENTS', 4);
const BATCH = num('RELIABILITY_BATCH', 50);
const RATE = num('RELIABILITY_EVENTS_PER_SECOND', 1_000);
const REQUEST_TIMEOUT_MS = 15_000;
/**
 * Organisations per scenario, each request using the next one's key: 1,000
 * events/s in batches of 50 is 1,200 requests a minute, and one organisation
 * may send 100 a minute from one address (Limits.rate.batchPerOrgIp).
 */
const ORGS_PER_SCENARIO = Math.max(4, Math.ceil(((RATE / BATCH) * 60) / 50));
/** Lag (seconds) under which a scenario counts as recovered. */
const LAG_OK_SECONDS = 2;
/** The last seconds of a scenario's load, every request of which must be acknowledged in full. */
const TAIL_MS = 3_000;

describe('the load driver reads a 200 as the gateway writes it', () => {
  const ids = ['a', 'b', 'c'];
  it('acknowledges all, all but the named failures, or none when the failures are not all named', () => {
    expect(acknowledgedBy(ids, { success: true, processed: 3, failed: 0 })).toEqual({ acknowledged: ids, ambiguous: false });
    expect(acknowledgedBy(ids, { success: false, processed: 2, failed: 1, errors: ['b: insert_failed'] })).toEqual({ acknowledged: ['a', 'c'], ambiguous: false });
    expect(acknowledgedBy(ids, { success: false, processed: 1, failed: 2, errors: ['b: insert_failed'] })).toEqual({ acknowledged: [], ambiguous: true });
    expect(acknowledgedBy(ids, { success: false, processed: 0, failed: 3, errors: ['a: x', 'b: x', 'c: x'] })).toEqual({ acknowledged: [], ambiguous: false });
  });
  it('counts only requests wholly inside a window', () => {
    const r = (start: number, end: number) => ({ start, end }) as RequestRecord;
    expect(within([r(0, 5), r(10, 20), r(15, 31), r(9, 12)], 10, 30)).toEqual([r(10, 20)]);
  });
});

describeWithKafka('broker faults under load: nothing acknowledged is lost or stored twice (three brokers, RF 3, min ISR 2)', () => {
  const suiteStarted = Date.now();
  const prefix = `rel${randomBytes(3).toString('hex')}.`;
  const topics = Object.values(prefixedTopics(prefix));
  const rawSpec = prefixedTopics(prefix).eventsRaw;
  const rawTopic = rawSpec.name;
  let cluster: Cluster | undefined;
  let database: TestDatabase | undefined;
  let env: Record<string, string>;
  let gateway: ServiceProcess | undefined;
  let resolvers: ServiceProcess[] = [];
  let forwarders: ServiceProcess[] = [];
  /** Every process started, for their logs. */
  const all: ServiceProcess[] = [];
  const live = () => [gateway, ...resolvers, ...forwarders].filter((p): p is ServiceProcess => p !== undefined && !p.exited());
  const figures: ScenarioFigures[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    await runMigrations(database.db, allMigrations);
    cluster = await startCluster();
    env = {
      DATABASE_URL: database.url,
      KAFKA_BROKERS: cluster.brokers.join(','),
      SCHEMA_REGISTRY_URL: kafkaEndpoints().registryUrl,
      KAFKA_REPLICATION_FACTOR: '3',
      KAFKA_MIN_INSYNC_REPLICAS: '2',
      TOPIC_PREFIX: prefix,
      LOG_LEVEL: process.env.RELIABILITY_LOG_LEVEL ?? 'error',
      STARTUP_CONNECT_TIMEOUT_SECONDS: '30',
    };
    // The topics exist before any service or load: services starting side by side race to create them.
    const bus = await createBus(loadConfig(busConfigSpec, env), { db: database.db });
    try {
      await bus.ensureTopics(topics);
    } finally {
      await bus.close();
    }
    await cluster.waitInSync(syncTopics(), 60_000);
    // One consumer per resolver process: each of the three owns about a third of the raw topic's 8 partitions.
    const resolverEnv = { ...env, RESOLVER_CONSUMERS: '1' };
    const started = await startServiceProcesses([
      { service: 'identity-resolver', env: resolverEnv },
      { service: 'identity-resolver', env: resolverEnv },
      { service: 'identity-resolver', env: resolverEnv },
      { service: 'conversion-forwarder', env },
      { service: 'conversion-forwarder', env },
    ]);
    all.push(...started);
    resolvers = started.slice(0, 3);
    forwarders = started.slice(3);
    gateway = await startServiceProcess('ingest-gateway', env);
    all.push(gateway);
    expect(await waitAllReady(live(), 60_000)).toEqual([]);
  }, 300_000);

  afterAll(async () => {
    await Promise.all(live().map((p) => p.stop()));
    // RELIABILITY_LOGS_DIR=<dir>: each process's output (its last 64 KB), for a look after a failure.
    const logs = process.env.RELIABILITY_LOGS_DIR;
    if (logs) {
      await mkdir(logs, { recursive: true });
      for (const p of all) await writeFile(path.join(logs, `${p.service}-${p.pid}.log`), p.stderr());
    }
    if (process.env.RELIABILITY_WRITE_DOC === '1' && figures.length === 4) {
      await writeReport(reportSection(figures, (Date.now() - suiteStarted) / 1000));
    }
    await cluster?.stop();
    await database?.drop();
  }, 120_000);

  /** Topics whose replicas must all be back in sync before the next fault (the services' and the group offsets). */
  function syncTopics(): string[] {
    return [...topics.map((t) => t.name), '__consumer_offsets'];
  }

  async function newKeys(scenario: string): Promise<{ orgIds: string[]; keys: string[] }> {
    const accounts = new AccountsStore(database!.db);
    const orgIds: string[] = [];
    const keys: string[] = [];
    for (let i = 0; i < ORGS_PER_SCENARIO; i++) {
      const org = await accounts.createOrganization({ name: `reliability ${scenario} ${i}` });
      orgIds.push(org.id);
      keys.push((await accounts.createApiKey({ orgId: org.id, type: 'write' })).key);
    }
    return { orgIds, keys };
  }

  interface Fault {
    /** Epoch ms: the fault began, and the system was whole again (or, for a crash left as it is, the crash). */
    start: number;
    end: number;
    /** The load goes on at least until then too (epoch ms), e.g. the first 200 after a recovery. */
    settledAt?: number;
    story: string;
  }

  interface Run {
    result: LoadResult;
    verification: Verification;
    fault: Fault;
    orgIds: string[];
    figures: ScenarioFigures;
  }

  /**
   * Steady load from fresh organisations through a freshly started gateway
   * (each scenario starts whole: a gateway a former scenario left broken
   * fails that scenario, not the next); after `warmSeconds`, `fault` (which
   * may wait for what it needs); the load goes on `afterSeconds` past the
   * fault's end; then every acknowledged event is looked for.
   */
  async function scenario(
    id: string,
    title: string,
    warmSeconds: number,
    fault: (load: LoadRun) => Promise<Fault>,
    afterSeconds: number,
  ): Promise<Run> {
    await cluster!.waitInSync(syncTopics(), 60_000);
    await gateway!.stop();
    gateway = await startServiceProcess('ingest-gateway', env);
    all.push(gateway);
    expect(await waitAllReady([gateway], 30_000)).toEqual([]);
    const { orgIds, keys } = await newKeys(id);
    const sampler = startStoredSampler(database!.db, orgIds);
    const load = startLoad({
      gateway: gateway!.origin,
      keys,
      clients: CLIENTS,
      batchSize: BATCH,
      eventsPerSecond: RATE,
      maxSeconds: 150,
      maxRequests: Math.ceil((RATE * 150) / BATCH),
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      idPrefix: `${prefix}${id}`,
    });
    let f: Fault;
    try {
      await sleep(warmSeconds * 1000);
      // The load is flowing before anything breaks.
      expect(load.counts().acknowledgedEvents).toBeGreaterThan(0);
      f = await fault(load);
      await sleep(Math.max(f.end, f.settledAt ?? 0) + afterSeconds * 1000 - Date.now());
    } catch (err) {
      await load.stop();
      await sampler.stop();
      throw err;
    }
    await load.stop();
    const result = await load.done;
    const verification = await verifyStored(database!.db, orgIds, result, 40_000);
    const samples = await sampler.stop();
    const lag = lagSeries(samples, result.ackTimeline);
    const fig: ScenarioFigures = {
      id,
      title,
      loadSeconds: (result.stoppedAt - result.startedAt) / 1000,
      eventsPerSecond: RATE,
      counts: result.counts,
      verification,
      recoverySeconds: recoverySeconds(lag, f.end, verification.caughtUpAt, LAG_OK_SECONDS),
      maxLagSeconds: maxLag(lag),
      longestGapSeconds: longestGapWithoutOk(result),
      story: f.story,
      unacknowledgedAnswers: unacknowledgedAnswers(result.records, 3),
    };
    // One line per scenario on stderr, for a CI log.
    process.stderr.write(
      `[reliability] ${id}: ${JSON.stringify({ counts: result.counts, verification: { ...verification, missingSample: undefined }, recovery: fig.recoverySeconds, maxLag: fig.maxLagSeconds, longestGap: fig.longestGapSeconds })}\n` +
        `[reliability] ${id}: answers that did not acknowledge everything: ${JSON.stringify(unacknowledgedAnswers(result.records))}\n`,
    );
    return { result, verification, fault: f, orgIds, figures: fig };
  }

  /**
   * What every scenario must show afterwards, as sentences (empty: all
   * held); they go to the report as they are, and the test fails on any.
   */
  async function problemsOf(run: Run): Promise<string[]> {
    const { verification: v, result } = run;
    const c = result.counts;
    const p: string[] = [];
    if (v.acknowledged === 0) p.push('no event was acknowledged');
    if (v.caughtUpAt === null) p.push('storage had not caught up 40 s after the load stopped');
    if (v.missing) p.push(`${v.missing} acknowledged events were not stored (${v.missingSample.slice(0, 3).join(', ')}, ...)`);
    if (v.duplicated) p.push(`${v.duplicated} events were stored twice`);
    if (v.usage !== v.stored) p.push(`the monthly usage counts ${v.usage} events for ${v.stored} stored`);
    if (v.phantom) p.push(`${v.phantom} events stored that were never sent`);
    if (v.ambiguousShort) p.push(`answers of 200 that reported more events processed than are stored: ${v.ambiguousShort}, ${v.ambiguousLost} events short (they named only 10 of their failures, so not which)`);
    if (v.missing || v.ambiguousShort) p.push(await whereAreThey(run));
    if (c.otherServerErrors) p.push(`${c.otherServerErrors} 5xx answers other than 503`);
    if (c.hangs) p.push(`${c.hangs} requests unanswered after ${REQUEST_TIMEOUT_MS / 1000} s`);
    if (c.networkErrors) p.push(`${c.networkErrors} requests failed to connect`);
    if (c.otherStatuses) p.push(`${c.otherStatuses} answers with another status`);
    if (c.unavailable !== c.unavailableWithRetryAfter) p.push(`${c.unavailable - c.unavailableWithRetryAfter} 503s without Retry-After`);
    // Recovered by itself: the last seconds of the load acknowledged in full, and every service ready.
    const tail = result.records.filter((r) => r.start >= result.stoppedAt - TAIL_MS);
    const refused = tail.filter((r) => r.acknowledged.length !== r.messageIds.length);
    if (tail.length === 0) p.push(`no request in the last ${TAIL_MS / 1000} s of load`);
    else if (refused.length) {
      p.push(`not recovered: ${refused.length} of the ${tail.length} requests of the last ${TAIL_MS / 1000} s not acknowledged in full (${unacknowledgedAnswers(refused, 1).join('')})`);
    }
    const notReady = await waitAllReady(live(), 30_000);
    if (notReady.length) p.push(`not ready 30 s after the load: ${notReady.join('; ')}`);
    return p;
  }

  /**
   * A scenario's outcome: what every scenario must show (problemsOf), then
   * what this one must show too (`ownProblems`), goes into its figures for
   * the report; the test fails on any.
   */
  async function judge(run: Run, ownProblems: string[] = []): Promise<void> {
    run.figures.failures = [...(await problemsOf(run)), ...ownProblems];
    figures.push(run.figures);
    expect(run.figures.failures).toEqual([]);
  }

  it('the verification detects an acknowledged event that is not stored, and usage above the rows stored', async () => {
    // One stored row of an acknowledged event deleted (its usage left as it was) must show up
    // as exactly that event lost and as usage one above the rows: the checks above can fail.
    const { orgIds, keys } = await newKeys('self-check');
    const load = startLoad({
      gateway: gateway!.origin,
      keys,
      clients: 1,
      batchSize: 10,
      eventsPerSecond: 100,
      maxSeconds: 10,
      maxRequests: 3,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      idPrefix: `${prefix}self`,
    });
    const result = await load.done;
    const whole = await verifyStored(database!.db, orgIds, result, 30_000);
    expect({ acknowledged: whole.acknowledged, missing: whole.missing, usage: whole.usage }).toEqual({ acknowledged: 30, missing: 0, usage: 30 });
    const victim = [...result.acknowledged][0]!;
    await database!.db.raw('delete from identity.events where org_id = any(?::uuid[]) and message_id = ?', [orgIds, victim]);
    const broken = await verifyStored(database!.db, orgIds, result, 1_000);
    expect({ missing: broken.missing, sample: broken.missingSample, usageMinusStored: broken.usage - broken.stored }).toEqual({
      missing: 1,
      sample: [victim],
      usageMinusStored: 1,
    });
  }, 60_000);

  /**
   * For a failure: whether the events a 200 vouched for but that are not
   * stored ever reached the log (a resolver fault) or not (the gateway or the
   * producer vouched for what was never written). Reads the raw topic, bounded.
   */
  async function whereAreThey(run: Run): Promise<string> {
    const stored = new Set(await storedIds(database!.db, run.orgIds));
    const missing = [...run.result.acknowledged].filter((id) => !stored.has(id));
    const short = run.result.records.filter((r) => r.ambiguous && r.messageIds.filter((id) => stored.has(id)).length < r.processed);
    const shortUnstored = short.flatMap((r) => r.messageIds.filter((id) => !stored.has(id)));
    const bus = await createBus(loadConfig(busConfigSpec, env), { db: database!.db });
    try {
      const look = lookInLog(bus, rawSpec, new Set([...missing, ...shortUnstored]));
      const timeout = sleep(60_000).then(() => undefined);
      const seen = await Promise.race([look, timeout]);
      if (!seen) return 'the raw topic could not be read within 60 s to tell where they went';
      const inLog = (ids: string[]) => ids.filter((id) => seen.found.has(id)).length;
      const parts: string[] = [];
      if (missing.length) parts.push(`${inLog(missing)} of the ${missing.length} acknowledged events not stored are in \`events.raw\``);
      if (short.length) {
        parts.push(
          `those 200s said ${short.reduce((n, r) => n + r.processed, 0)} processed, ${short.reduce((n, r) => n + r.messageIds.filter((id) => stored.has(id)).length, 0)} are stored, ` +
            `and ${inLog(shortUnstored)} of their ${shortUnstored.length} other events are in \`events.raw\``,
        );
      }
      parts.push(`its dead-letter topic holds ${seen.deadLettered} messages`);
      return `in the log: ${parts.join('; ')}`;
    } finally {
      await bus.close();
    }
  }

  it(
    'a. kill -9 of the broker leading most of the raw topic, restarted after 10 s',
    async () => {
      const run = await scenario(
        'a',
        'kill -9 of the raw topic\'s main leader, back after 10 s',
        6,
        async () => {
          const node = await cluster!.leader(rawTopic);
          const start = Date.now();
          await cluster!.kill(node);
          await sleep(10_000);
          await cluster!.restart(node);
          const end = Date.now();
          return {
            start,
            end,
            story:
              `A 200 means every event of the request was written to \`events.raw\` with acks=all, on at least two of the three replicas (min.insync.replicas 2), so a broker that dies holds no event only it had. ` +
              `Node ${node}, leading most partitions of \`events.raw\`, was killed with SIGKILL (data kept) and started again ${((end - start) / 1000).toFixed(0)} s later (10 s down, then its start-up); the other two kept the controller quorum and took over its partitions once it was fenced.`,
          };
        },
        12,
      );
      await judge(run);
    },
    180_000,
  );

  it(
    'b. rolling restart of the three brokers, one at a time',
    async () => {
      const run = await scenario(
        'b',
        'rolling restart of all three brokers',
        5,
        async () => {
          const start = Date.now();
          const steps: string[] = [];
          for (const node of NODES) {
            const t = Date.now();
            await cluster!.stopNode(node);
            await cluster!.restart(node);
            // Only then the next: with this one still catching up, stopping another leaves one replica in sync.
            await cluster!.waitInSync(syncTopics(), 60_000);
            steps.push(`${node} in ${((Date.now() - t) / 1000).toFixed(0)} s`);
          }
          return {
            start,
            end: Date.now(),
            story:
              'With one broker of three down, two replicas of every partition remain, enough for acks=all under min.insync.replicas 2: writes go on, and what was acknowledged is on a broker that stays up. ' +
              `Each node in turn was stopped with SIGTERM (a controlled shutdown: its leaderships move first), started again, and the next one taken down only once every partition had its three replicas in sync again (node ${steps.join(', node ')}).`,
          };
        },
        8,
      );
      await judge(run);
    },
    240_000,
  );

  it(
    'c. two brokers down at once: 503 with Retry-After, never a 200, a 500 or a hang; 200s again by themselves once they are back',
    async () => {
      let downConfirmed = 0;
      let restartBegan = 0;
      let firstOkAfter = 0;
      const run = await scenario(
        'c',
        'two of three brokers down for 15 s',
        6,
        async (load) => {
          const first = await cluster!.leader(rawTopic);
          const second = NODES.find((n) => n !== first)!;
          const survivor = NODES.find((n) => n !== first && n !== second) as Node;
          const start = Date.now();
          await Promise.all([cluster!.kill(first), cluster!.kill(second)]);
          expect(await cluster!.running()).toEqual([survivor]);
          downConfirmed = Date.now();
          await sleep(15_000);
          restartBegan = Date.now();
          await cluster!.restart(first);
          await cluster!.restart(second);
          const end = Date.now();
          // Requests succeed again with nothing done to the services: wait (bounded) for the first 200.
          for (const until = Date.now() + 30_000; Date.now() < until; await sleep(200)) {
            const ok = load.records().find((r) => r.outcome === 200 && r.acknowledged.length > 0 && r.start >= restartBegan);
            if (ok) {
              firstOkAfter = ok.end;
              break;
            }
          }
          return {
            start,
            end,
            ...(firstOkAfter ? { settledAt: firstOkAfter } : {}),
            story:
              'With one broker left no write can reach two replicas, so nothing may be acknowledged: the gateway must refuse with 503 and Retry-After, and the client keeps the events and sends them again. ' +
              `Nodes ${first} and ${second} were killed with SIGKILL together, leaving node ${survivor} alone: below min.insync.replicas, and without a controller quorum. ` +
              `After 15 s both were started again, one after the other (${((end - restartBegan) / 1000).toFixed(0)} s); ` +
              (firstOkAfter
                ? `the first 200 came ${((firstOkAfter - restartBegan) / 1000).toFixed(1)} s after the first restart began, with nothing done to the services.`
                : 'no request was acknowledged within 30 s of the restarts.'),
          };
        },
        10,
      );
      const problems: string[] = [];
      // While only one broker was up: requests that started after both were confirmed down and
      // ended before the first restart began. Each must be a 503 with Retry-After: none acknowledged anything.
      const inside = within(run.result.records, downConfirmed, restartBegan);
      const wrong = inside.filter((r) => r.outcome !== 503 || !r.retryAfter || r.acknowledged.length > 0);
      if (inside.length === 0) problems.push('no request started and ended while only one broker was up');
      if (wrong.length) problems.push(`while only one broker was up, ${wrong.length} of ${inside.length} answers were not 503 with Retry-After (${unacknowledgedAnswers(wrong, 1).join('')})`);
      if (!firstOkAfter) problems.push('no 200 within 30 s of the restarts');
      run.figures.story += ` ${inside.length} requests started and ended while only one broker was up: ${inside.length - wrong.length} of them answered 503 with Retry-After.`;
      await judge(run, problems);
    },
    240_000,
  );

  /** Raw-topic partitions a resolver reports lag for: those its consumer handled since it got them. */
  async function rawPartitionsOf(p: ServiceProcess): Promise<Set<number>> {
    const text = await (await fetch(`${p.origin}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    const owned = new Set<number>();
    for (const line of text.split('\n')) {
      if (!line.startsWith('bus_consumer_lag{') || !line.includes(`topic="${rawTopic}"`)) continue;
      const m = /partition="(\d+)"/.exec(line);
      if (m) owned.add(Number(m[1]));
    }
    return owned;
  }

  it(
    'd. kill -9 of one of the three resolvers: its partitions move to the other two',
    async () => {
      let victimPartitions: number[] = [];
      let covered = new Set<number>();
      const run = await scenario(
        'd',
        'kill -9 of one of three resolvers',
        8,
        async () => {
          const owned = await Promise.all(resolvers.map(rawPartitionsOf));
          const i = owned.reduce((best, o, j) => (o.size > owned[best]!.size ? j : best), 0);
          const victim = resolvers[i]!;
          victimPartitions = [...owned[i]!].sort((a, b) => a - b);
          const start = Date.now();
          await victim.kill();
          // Left dead: the others take its partitions once its session (10 s) expires.
          for (const until = Date.now() + 45_000; Date.now() < until; await sleep(1_000)) {
            const others = await Promise.all(resolvers.filter((r) => r !== victim).map(rawPartitionsOf));
            covered = new Set(others.flatMap((o) => [...o]));
            if (victimPartitions.every((p) => covered.has(p))) break;
          }
          return {
            start,
            end: start,
            story:
              'An acknowledged event is in the log whatever happens to its consumers: a resolver commits its offsets only after the transaction that stores the events (and counts them in the monthly usage) has committed, so a crash means redelivery, never loss. ' +
              `The resolver process handling partitions ${victimPartitions.join(', ')} of \`events.raw\` (one consumer per process) was killed with SIGKILL and left dead; after its consumer-group session (10 s) expired, the other two took its partitions over from its last committed offsets, and redelivered events were recognised by (organisation, messageId) and neither stored nor counted again. Recovery is counted from the kill.`,
          };
        },
        20,
      );
      const problems: string[] = [];
      if (victimPartitions.length === 0) problems.push('the killed resolver had handled no partition of the raw topic');
      const orphans = victimPartitions.filter((p) => !covered.has(p));
      if (orphans.length) problems.push(`partitions ${orphans.join(', ')} of the killed resolver were not taken over within 45 s`);
      if (run.figures.recoverySeconds === null) problems.push('the lag never fell under 2 s');
      await judge(run, problems);
    },
    240_000,
  );
});
