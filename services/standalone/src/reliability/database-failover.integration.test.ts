/**
 * Issue 28, "lose nothing when the database primary dies": PostgreSQL as a
 * primary and a synchronous standby, failed over by Patroni (etcd as its
 * store), behind HAProxy, the one address the services know
 * (infra/local/postgres-ha.sh). Under steady load on the Kafka tier the
 * primary is killed with SIGKILL (its Patroni and its postgres: a machine
 * dying). Ingestion must not stop (the gateway's only hard dependency is the
 * log: keys it confirmed recently are honoured, limits counted in the
 * process); the services whose work is the database go not-ready and come
 * back by themselves, answering the spec's errors meanwhile, never hanging
 * and never with raw text; and every acknowledged event is stored once,
 * counted once. With RELIABILITY_WRITE_DOC=1 the figures go to
 * docs/reliability.md (`npm run reliability`).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { busConfigSpec, createBus, prefixedTopics } from '@svc/bus';
import { createDb, freePort, loadConfig, runMigrations, type Db } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { allMigrations } from '../migrations';
import { describeWithKafkaAnd, infraScript as script, kafkaEnv, longestGapWithoutOk, startLoad, within } from '@svc/testkit';
import { startServiceProcesses, type ServiceProcess } from '../test-support/service-processes';
import { reportSection, writeReport, type ScenarioFigures } from './report';
import { lagSeries, maxLag, recoverySeconds, startStoredSampler, verifyStored } from './verify';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));
const CLIENTS = 2;
const BATCH = 50;
const RATE = 500;
/** One organisation may send 100 requests a minute from one address: enough of them for the rate. */
const ORGS = Math.ceil(((RATE / BATCH) * 60) / 50);

interface Probe {
  at: number;
  service: string;
  /** /readyz status, or 'hang' when it did not answer within 6 s. */
  ready: number | 'hang';
}

describeWithKafkaAnd('database failover under load: Patroni promotes the standby, ingestion goes on, nothing is lost', ['postgresql', 'patroni', 'etcd', 'haproxy'], () => {
  const suiteStarted = Date.now();
  const prefix = `dbf${randomBytes(3).toString('hex')}.`;
  let workdir: string;
  let databaseUrl: string;
  let db: Db;
  let services: ServiceProcess[] = [];

  beforeAll(async () => {
    workdir = await mkdtemp(path.join(os.tmpdir(), 'svc-pgha-'));
    const out = await script('postgres-ha.sh', ['start', workdir, String(await freePort())], 240_000);
    const url = new URL((out.trim().split('\n').pop() ?? '').replace(/^DATABASE_URL=/, ''));
    const admin = createDb({ url: url.toString(), poolMax: 1 });
    await admin.raw('create database svc');
    await admin.destroy();
    url.pathname = '/svc';
    databaseUrl = url.toString();
    db = createDb({ url: databaseUrl, poolMax: 4 });
    await runMigrations(db, allMigrations);
    const env = { DATABASE_URL: databaseUrl, ...kafkaEnv(), TOPIC_PREFIX: prefix, LOG_LEVEL: 'error' };
    const bus = await createBus(loadConfig(busConfigSpec, env), { db });
    await bus.ensureTopics(Object.values(prefixedTopics(prefix)));
    await bus.close();
    const names = ['ingest-gateway', 'identity-resolver', 'identity-resolver', 'profile-api', 'conversion-forwarder'] as const;
    services = await startServiceProcesses(names.map((service) => ({ service, env })));
  }, 300_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await db?.destroy();
    if (workdir) {
      await script('postgres-ha.sh', ['stop', workdir], 120_000).catch((err: unknown) => console.warn('postgres-ha stop:', err));
      await rm(workdir, { recursive: true, force: true });
    }
  }, 180_000);

  it('kill -9 of the primary: ingestion goes on, the services come back by themselves, nothing acknowledged is lost', async () => {
    const accounts = new AccountsStore(db);
    const orgIds: string[] = [];
    const keys: string[] = [];
    for (let i = 0; i < ORGS; i++) {
      const org = await accounts.createOrganization({ name: `failover-${i}` });
      orgIds.push(org.id);
      keys.push((await accounts.createApiKey({ orgId: org.id, type: 'write' })).key);
    }
    const read = (await accounts.createApiKey({ orgId: orgIds[0]!, type: 'read' })).key;
    const [gateway, , , profileApi] = services as [ServiceProcess, ServiceProcess, ServiceProcess, ServiceProcess, ServiceProcess];

    // Readiness of every service, and the Profiles API's answers, twice a second throughout.
    const probes: Probe[] = [];
    const apiAnswers: Array<{ at: number; status: number | 'hang'; json: boolean }> = [];
    let probing = true;
    const probeLoop = (async () => {
      while (probing) {
        const at = Date.now();
        await Promise.all([
          ...services.map(async (s) => {
            const ready = await fetch(`${s.origin}/readyz`, { signal: AbortSignal.timeout(6_000) }).then((r) => r.status, () => 'hang' as const);
            probes.push({ at, service: s.service, ready });
          }),
          (async () => {
            try {
              const res = await fetch(`${profileApi.origin}/functions/v1/v1-profiles?limit=1`, { headers: { authorization: `Bearer ${read}` }, signal: AbortSignal.timeout(15_000) });
              const text = await res.text();
              let json = false;
              try {
                json = typeof (JSON.parse(text) as unknown) === 'object';
              } catch {
                json = false;
              }
              apiAnswers.push({ at, status: res.status, json });
            } catch {
              apiAnswers.push({ at, status: 'hang', json: false });
            }
          })(),
        ]);
        await sleep(500 - (Date.now() - at));
      }
    })();

    const sampler = startStoredSampler(db, orgIds);
    const load = startLoad({
      gateway: gateway.origin,
      keys,
      clients: CLIENTS,
      batchSize: BATCH,
      eventsPerSecond: RATE,
      maxSeconds: 60,
      maxRequests: 10_000,
      requestTimeoutMs: 15_000,
      idPrefix: `dbf-${randomBytes(3).toString('hex')}`,
    });
    await sleep(10_000);
    const killedAt = Date.now();
    const killed = (await script('postgres-ha.sh', ['kill-primary', workdir], 60_000)).trim().split('\n').pop();
    // The new primary answers through HAProxy.
    let promotedAt = 0;
    while (!promotedAt && Date.now() - killedAt < 90_000) {
      const probe = createDb({ url: databaseUrl, poolMax: 1 });
      if (await probe.raw('select 1').then(() => true, () => false)) promotedAt = Date.now();
      await probe.destroy();
      if (!promotedAt) await sleep(250);
    }
    expect(promotedAt).toBeGreaterThan(0);
    await sleep(15_000);
    const result = await load.stop();
    probing = false;
    await probeLoop;
    const verification = await verifyStored(db, orgIds, result, 90_000);
    const lag = lagSeries(await sampler.stop(), result.ackTimeline);

    // Ingestion went on: the share of requests that started after the kill and ended before the new primary answered.
    const duringFailover = within(result.records, killedAt, promotedAt);
    const accepted = duringFailover.filter((r) => r.outcome === 200).length;
    const share = duringFailover.length ? accepted / duringFailover.length : 1;

    // The services that need the database went not-ready, and came back without a restart.
    const notReadyDuring = (service: string) => probes.some((p) => p.service === service && p.at >= killedAt && p.ready !== 200);
    const readyAtEnd = services.map((s) => {
      const last = probes.filter((p) => p.service === s.service).at(-1);
      return [s.service, last?.ready];
    });
    const failures = [
      verification.missing > 0 && `${verification.missing} acknowledged events not stored`,
      verification.duplicated > 0 && `${verification.duplicated} events stored twice`,
      verification.usage !== verification.stored && `usage ${verification.usage} against ${verification.stored} stored`,
      result.counts.hangs > 0 && `${result.counts.hangs} requests hung`,
      result.counts.otherServerErrors > 0 && `${result.counts.otherServerErrors} answers 5xx other than 503`,
      share <= 0.9 && `only ${(share * 100).toFixed(0)}% of the requests during the failover accepted`,
      !notReadyDuring('profile-api') && 'the Profiles API never went not-ready',
      notReadyDuring('ingest-gateway') && 'the gateway went not-ready',
      readyAtEnd.some(([, status]) => status !== 200) && 'a service was not ready at the end',
    ].filter((f): f is string => typeof f === 'string');
    const figures: ScenarioFigures = {
      id: 'e',
      title: 'kill -9 of the PostgreSQL primary (Patroni, synchronous standby, HAProxy)',
      loadSeconds: (result.stoppedAt - result.startedAt) / 1000,
      eventsPerSecond: RATE,
      counts: result.counts,
      verification,
      recoverySeconds: recoverySeconds(lag, promotedAt, verification.caughtUpAt),
      maxLagSeconds: maxLag(lag),
      longestGapSeconds: longestGapWithoutOk(result),
      failures,
      story:
        `Kafka tier, one broker (the database is the fault here); one gateway, two resolvers, the Profiles API and a forwarder as processes; PostgreSQL 15 primary and synchronous standby under Patroni, reached through HAProxy only. ` +
        `${killed ?? 'The primary'} was killed with SIGKILL (Patroni and postgres) 10 s into the load; the standby answered as primary through HAProxy ${((promotedAt - killedAt) / 1000).toFixed(1)} s later. ` +
        `Meanwhile the gateway accepted ${accepted} of the ${duringFailover.length} requests that started and ended within the failover (${(share * 100).toFixed(0)}%), on keys the database had confirmed (KEY_OUTAGE_GRACE_SECONDS) and limits counted in the process; ` +
        `the Profiles API answered ${apiAnswers.filter((a) => a.at >= killedAt && a.at <= promotedAt && a.status !== 200).length} requests with its JSON errors and went not-ready, and every service was ready again without a restart. ` +
        `An acknowledgement here means the event is in Kafka; it is stored once the resolver's transaction commits on a primary whose standby has it.`,
    };
    if (process.env.RELIABILITY_WRITE_DOC === '1') await writeReport(reportSection([figures], (Date.now() - suiteStarted) / 1000), 'database');

    expect({ missing: verification.missing, sample: verification.missingSample }).toEqual({ missing: 0, sample: [] });
    expect(verification.duplicated).toBe(0);
    expect(verification.usage).toBe(verification.stored);
    expect(result.counts.hangs).toBe(0);
    expect(result.counts.otherServerErrors).toBe(0);
    expect(duringFailover.length).toBeGreaterThan(10);
    expect(share).toBeGreaterThan(0.9);
    expect(notReadyDuring('profile-api')).toBe(true);
    expect(notReadyDuring('ingest-gateway')).toBe(false);
    expect(readyAtEnd).toEqual(services.map((s) => [s.service, 200]));
    // Never a hang, never raw text: every answer of the Profiles API was JSON.
    expect(apiAnswers.filter((a) => a.status === 'hang' || !a.json)).toEqual([]);
  }, 300_000);
});
