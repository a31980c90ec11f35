/**
 * The Helm chart installed on a real Kubernetes cluster (infra/local/kube.sh:
 * Kubernetes built from source, Debian's containerd and runc, CoreDNS and
 * Traefik as the ingress controller), against Kafka, the registry and
 * PostgreSQL in the cluster (infra/helm/ci/cluster-infra.yaml):
 *
 *   - every Deployment rolls out with its probes passing, after the migrate
 *     and topics hook Jobs complete;
 *   - `helm test` posts a batch through the Ingress over TLS and reads the
 *     profile back through the Profiles API;
 *   - every operation of the OpenAPI document answers through the Ingress;
 *   - `helm upgrade` to a build with one more migration, under steady load:
 *     0 acknowledged events lost, no 5xx, pods replaced one at a time;
 *   - the PodDisruptionBudget refuses a second eviction;
 *   - `helm uninstall` leaves nothing of the release.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createDb, freePort, type Db } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { startLoad, unacknowledgedAnswers, type LoadResult } from '@svc/testkit';
import { Agent, fetch as undiciFetch } from 'undici';
import { edgeClient } from './smoke-test';
import { ROOT, buildImages, deployTools, describeWhenPresent, missingPrograms, run, runOk, type DeployTools } from './test-support/deployment';
import { answersToEveryDocumentedOperation } from './test-support/documented-operations';

const KUBE_SH = path.join(ROOT, 'infra/local/kube.sh');
const CHART = path.join(ROOT, 'infra/helm/svc');
const VALUES = path.join(ROOT, 'infra/helm/ci/cluster-values.yaml');
const INFRA = path.join(ROOT, 'infra/helm/ci/cluster-infra.yaml');
const NAMESPACE = 'svc';
const RELEASE = 'svc';
const IMAGE = 'localhost/svc:local';
/** The same build with one more migration: what the upgrade goes to. */
const NEXT_IMAGE = 'localhost/svc:next';
const STAND_INS = ['localhost/svc-local/postgres:15', 'localhost/svc-local/kafka:4.3.1', 'localhost/svc-local/apicurio-registry:3.0.9'];
/** kube.sh's defaults: the node's address and Traefik's HTTPS NodePort. */
const INGRESS = { address: '10.213.0.1', port: 30443, host: 'svc.test' };
const COMPONENTS = ['ingest-gateway', 'identity-resolver', 'profile-api', 'consent-api', 'conversion-forwarder'];
const CLUSTER_PROGRAMS = ['go', 'python3', 'gcc', 'openssl', 'podman', 'runc', 'debootstrap', 'npm', 'java', 'mvn', 'containerd', 'ctr', 'etcd', 'conntrack', 'iptables'];

describeWhenPresent('the Helm chart on a real Kubernetes cluster', missingPrograms(CLUSTER_PROGRAMS, true), () => {
  let dir: string;
  let tools: DeployTools;
  let edgeCa: string;
  let clusterUp = false;
  /** The cluster's PostgreSQL, for what a client cannot see: the events stored, the migrations applied. */
  let db: { db: Db; close: () => Promise<void> } | undefined;

  const kubectl = (args: string[], timeoutMs = 120_000) => runOk('bash', [KUBE_SH, 'kubectl', path.join(dir, 'cluster'), ...args], { timeoutMs });
  const helm = (args: string[], timeoutMs = 15 * 60_000) => runOk(tools.helm, ['--kubeconfig', path.join(dir, 'cluster/kubeconfig'), '-n', NAMESPACE, ...args], { timeoutMs });
  const json = async <T>(args: string[]): Promise<T> => JSON.parse(await kubectl([...args, '-o', 'json'])) as T;

  /** A request to the Ingress as a client makes it: https://svc.test/functions/v1, trusting only the test's CA (the smoke test's client). */
  const ingress = (method: string, route: string, key: string, body?: unknown) =>
    edgeClient(`https://${INGRESS.host}/functions/v1`, `${INGRESS.address}:${INGRESS.port}`, edgeCa)(method, route, key, body);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'svc-helm-'));
    tools = await deployTools();
    await buildImages(IMAGE);
    await buildNextImage(dir);
    await runOk('bash', [KUBE_SH, 'up', path.join(dir, 'cluster')], { timeoutMs: 30 * 60_000 });
    clusterUp = true;
    await runOk('bash', [KUBE_SH, 'import', path.join(dir, 'cluster'), IMAGE, NEXT_IMAGE, ...STAND_INS], { timeoutMs: 10 * 60_000 });

    await kubectl(['apply', '-f', INFRA]);
    edgeCa = await edgeSecrets(dir, kubectl);
    await kubectl(['-n', 'kafka', 'rollout', 'status', 'statefulset/kafka', '--timeout', '300s'], 320_000);
    await kubectl(['-n', 'kafka', 'rollout', 'status', 'deployment/apicurio-registry', '--timeout', '300s'], 320_000);
    await kubectl(['-n', NAMESPACE, 'rollout', 'status', 'statefulset/svc-db', '--timeout', '300s'], 320_000);
    try {
      await helm(['install', RELEASE, CHART, '-f', VALUES, '--wait', '--timeout', '10m']);
    } catch (err) {
      const pods = await kubectl(['get', 'pods', '-A', '-o', 'wide']).catch((e: unknown) => String(e));
      const events = await kubectl(['-n', NAMESPACE, 'get', 'events', '--sort-by', '.lastTimestamp']).catch((e: unknown) => String(e));
      throw new Error(`${(err as Error).message}\n--- pods ---\n${pods}\n--- events ---\n${events.slice(-6000)}`);
    }
    db = await portForwardedDb(dir);
  }, 75 * 60_000);

  afterAll(async () => {
    await db?.close();
    if (clusterUp) await run('bash', [KUBE_SH, 'down', path.join(dir, 'cluster')], { timeoutMs: 5 * 60_000 });
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 6 * 60_000);

  it('every Deployment rolled out, its pods ready and their probes passing; the migrate and topics hooks completed', async () => {
    const deployments = await json<{ items: Deployment[] }>(['-n', NAMESPACE, 'get', 'deployments', '-l', `app.kubernetes.io/instance=${RELEASE}`]);
    expect(deployments.items.map((d) => d.metadata.labels['app.kubernetes.io/component']).sort()).toEqual([...COMPONENTS].sort());
    for (const d of deployments.items) {
      expect({ name: d.metadata.name, ready: d.status.readyReplicas, updated: d.status.updatedReplicas }).toEqual({ name: d.metadata.name, ready: d.spec.replicas, updated: d.spec.replicas });
    }
    // The hook Jobs are deleted once they succeed (hook-succeeded); their events stay.
    const events = await json<{ items: Array<{ involvedObject: { kind: string; name: string }; reason: string }> }>(['-n', NAMESPACE, 'get', 'events']);
    const completed = events.items.filter((e) => e.involvedObject.kind === 'Job' && e.reason === 'Completed').map((e) => e.involvedObject.name);
    expect(completed.sort()).toEqual([`${RELEASE}-migrate`, `${RELEASE}-topics`]);
  });

  it('`helm test`: a batch posted through the Ingress over TLS, its profile read back through the Profiles API', async () => {
    // The pod's command exits 0 only when every step answered as it should (its output is checked in the compose test).
    const out = await helm(['test', RELEASE, '--timeout', '5m'], 6 * 60_000);
    expect(out).toMatch(/TEST SUITE:\s+svc-smoke-test[\s\S]*Phase:\s+Succeeded/);
  }, 7 * 60_000);

  it('every operation of the OpenAPI document answers through the Ingress: none is a 404', async () => {
    const answers = await answersToEveryDocumentedOperation(ingress);
    expect(answers.filter((a) => a.endsWith(' 404'))).toEqual([]);
    // The Segment-compatible routes: /batch and /b, and each of the six types by name and by first letter.
    expect(answers.filter((a) => a.includes('/segment/'))).toHaveLength(14);
    expect(await ingress('GET', '/openapi.json', '')).toMatchObject({ status: 200 });
    // An unknown route reaches the gateway, which answers with the API's JSON 404.
    const unknown = await ingress('GET', '/no-such-route', '');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ success: false });
  });

  it('`helm upgrade` to a build with one more migration, under steady load: 0 acknowledged events lost, no 5xx, pods replaced one at a time', async () => {
    const { keys, orgIds } = await testKeys(db!.db);
    const agent = new Agent({ connect: { ca: edgeCa, servername: INGRESS.host, lookup: (_host, _options, callback) => callback(null, [{ address: INGRESS.address, family: 4 }]) } });
    const load = startLoad({
      gateway: `https://${INGRESS.host}:${INGRESS.port}`,
      fetch: ((url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch,
      // Ten organisations' keys in turn: 1.2 requests/s each stays under the
      // spec's 100 per minute per (organisation, client IP).
      keys,
      clients: 4,
      batchSize: 20,
      eventsPerSecond: 240,
      maxSeconds: 600,
      maxRequests: 1_000_000,
      requestTimeoutMs: 20_000,
      idPrefix: `upgrade-${randomUUID().slice(0, 8)}`,
    });
    const watch = watchRollout(dir);
    let result: LoadResult;
    try {
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      await helm(['upgrade', RELEASE, CHART, '-f', VALUES, '--set', `image.tag=${NEXT_IMAGE.split(':')[1]}`, '--wait', '--timeout', '10m']);
      await new Promise((resolve) => setTimeout(resolve, 10_000));
    } finally {
      result = await load.stop();
      await agent.close();
    }
    const samples = await watch.stop();

    // Load: every request answered, none with a 5xx (nor anything but a 200).
    expect(unacknowledgedAnswers(result.records)).toEqual([]);
    const { requests, ok, sentEvents, acknowledgedEvents, ...otherOutcomes } = result.counts;
    expect(Object.entries(otherOutcomes).filter(([, n]) => n !== 0)).toEqual([]);
    expect({ ok, acknowledgedEvents }).toEqual({ ok: requests, acknowledgedEvents: sentEvents });
    expect(result.counts.acknowledgedEvents).toBeGreaterThan(1_000);

    // The new build runs: every pod's image is the next one, and its migration is applied.
    const pods = await json<{ items: Pod[] }>(['-n', NAMESPACE, 'get', 'pods', '-l', `app.kubernetes.io/instance=${RELEASE}`]);
    const services = pods.items.filter((p) => !p.metadata.deletionTimestamp && COMPONENTS.includes(p.metadata.labels['app.kubernetes.io/component'] ?? ''));
    expect(services.length).toBeGreaterThanOrEqual(COMPONENTS.length);
    expect([...new Set(services.map((p) => p.spec.containers[0]!.image))]).toEqual([NEXT_IMAGE]);

    // Every acknowledged event is stored.
    expect((await db!.db.raw<{ rows: unknown[] }>("select 1 from consent.knex_migrations where name = '0003_upgrade_probe'")).rows).toHaveLength(1);
    const deadline = Date.now() + 120_000;
    let missing = [...result.acknowledged];
    while (missing.length && Date.now() < deadline) {
      const { rows } = await db!.db.raw<{ rows: Array<{ message_id: string }> }>('select message_id from identity.events where org_id = any(?::uuid[])', [orgIds]);
      const stored = new Set(rows.map((r) => r.message_id));
      missing = missing.filter((id) => !stored.has(id));
      if (missing.length) await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
    expect({ acknowledged: result.acknowledged.size, missing: missing.length }).toEqual({ acknowledged: result.acknowledged.size, missing: 0 });

    // One pod at a time: never fewer ready pods than wanted (maxUnavailable 0), never more than one extra (maxSurge 1).
    expect(samples.length).toBeGreaterThan(10);
    process.stdout.write(
      `helm upgrade under load: ${result.counts.requests} requests (${result.counts.ok} answered 200), ${result.acknowledged.size} events acknowledged and stored, ` +
        `over ${Math.round((result.stoppedAt - result.startedAt) / 1000)} s; ${samples.length} rollout samples\n`,
    );
    for (const component of COMPONENTS) {
      const wanted = Math.min(...samples.map((s) => s[component]?.wanted ?? 0));
      const worst = samples.reduce((w, s) => ({ ready: Math.min(w.ready, s[component]?.ready ?? 0), pods: Math.max(w.pods, s[component]?.pods ?? 0) }), { ready: Infinity, pods: 0 });
      expect({ component, ready: worst.ready >= wanted, pods: worst.pods <= wanted + 1 }).toEqual({ component, ready: true, pods: true });
    }
  }, 20 * 60_000);

  it('the PodDisruptionBudget lets one gateway pod be evicted at a time, and refuses the second', async () => {
    const pods = await json<{ items: Pod[] }>(['-n', NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/component=ingest-gateway']);
    expect(pods.items.length).toBeGreaterThanOrEqual(2);
    const evict = async (name: string) => {
      const file = path.join(dir, `eviction-${name}.json`);
      await writeFile(file, JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: NAMESPACE } }));
      return run('bash', [KUBE_SH, 'kubectl', path.join(dir, 'cluster'), 'create', '--raw', `/api/v1/namespaces/${NAMESPACE}/pods/${name}/eviction`, '-f', file]);
    };
    expect(await evict(pods.items[0]!.metadata.name)).toMatchObject({ code: 0 });
    const second = await evict(pods.items[1]!.metadata.name);
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain('disruption budget');
    await kubectl(['-n', NAMESPACE, 'rollout', 'status', 'deployment/svc-ingest-gateway', '--timeout', '300s'], 320_000);
  }, 6 * 60_000);

  it('`helm uninstall` leaves nothing of the release running, nor any object it made', async () => {
    await helm(['uninstall', RELEASE, '--wait', '--timeout', '5m']);
    // --wait waits for the objects, not for their pods to finish stopping (preStop, then the ordered shutdown).
    const selector = `app.kubernetes.io/instance=${RELEASE}`;
    await kubectl(['-n', NAMESPACE, 'wait', '--for=delete', 'pods', '-l', selector, '--timeout', '120s'], 150_000);
    const left = await kubectl(['-n', NAMESPACE, 'get', 'all,configmaps,secrets,serviceaccounts,ingresses,networkpolicies,poddisruptionbudgets,jobs', '-l', selector, '-o', 'name']);
    expect(left.trim()).toBe('');
    const pods = await json<{ items: Pod[] }>(['-n', NAMESPACE, 'get', 'pods']);
    expect(pods.items.map((p) => p.metadata.name)).toEqual(['svc-db-0']);
  }, 6 * 60_000);
});

interface Deployment {
  metadata: { name: string; labels: Record<string, string> };
  spec: { replicas: number };
  status: { readyReplicas?: number; updatedReplicas?: number };
}
interface Pod {
  metadata: { name: string; labels: Record<string, string>; deletionTimestamp?: string };
  spec: { containers: Array<{ image: string }> };
  status: { conditions?: Array<{ type: string; status: string }> };
}

/** The root Dockerfile's build of this tree with one more migration (an additive consent table), as NEXT_IMAGE. */
async function buildNextImage(dir: string): Promise<void> {
  const tree = path.join(dir, 'next');
  const files = (await runOk('git', ['-C', ROOT, 'ls-files', '--cached', '--others', '--exclude-standard'])).trim().split('\n');
  for (const file of files.filter((f) => /^(package(-lock)?\.json|tsconfig\.base\.json|Dockerfile|\.dockerignore|LICENSE|(libs|services|tools)\/)/.test(f))) {
    await cp(path.join(ROOT, file), path.join(tree, file)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err; // deleted in the work tree, not yet in the index
    });
  }
  const migrations = path.join(tree, 'services/consent-api/src/migrations.ts');
  const source = await readFile(migrations, 'utf8');
  const probe = "    sqlMigration('0003_upgrade_probe', 'create table consent.upgrade_probe (id int primary key)'),\n  ],\n};";
  expect(source).toMatch(/\n {2}\],\n\};\s*$/);
  await writeFile(migrations, source.replace(/\n {2}\],\n\};\s*$/, `\n${probe}\n`));
  await runOk('podman', ['build', '--quiet', '--layers', '-t', NEXT_IMAGE, '--build-arg', 'BASE_IMAGE=localhost/svc-local/node:20', tree], {
    env: { CONTAINERS_CONF: path.join(ROOT, 'infra/local/podman/containers.conf') },
    timeoutMs: 30 * 60_000,
  });
}

/** The Ingress's certificate for svc.test from a CA of the test's own, the product's secrets, and the CA for `helm test`. */
async function edgeSecrets(dir: string, kubectl: (args: string[]) => Promise<string>): Promise<string> {
  const pki = path.join(dir, 'edge');
  const ssl = (args: string[]) => runOk('openssl', args, { cwd: pki });
  await runOk('mkdir', ['-p', pki]);
  await ssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=svc-test-edge-ca', '-keyout', 'ca.key', '-out', 'ca.crt']);
  await ssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${INGRESS.host}`, '-keyout', 'tls.key', '-out', 'tls.csr']);
  await writeFile(path.join(pki, 'ext'), `subjectAltName=DNS:${INGRESS.host}\nextendedKeyUsage=serverAuth\n`);
  await ssl(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'ext', '-out', 'tls.crt']);
  await kubectl(['-n', NAMESPACE, 'create', 'secret', 'tls', 'svc-tls', '--cert', path.join(pki, 'tls.crt'), '--key', path.join(pki, 'tls.key')]);
  await kubectl(['-n', NAMESPACE, 'create', 'secret', 'generic', 'svc-edge-ca', '--from-file', `ca.crt=${path.join(pki, 'ca.crt')}`]);
  const hex = (bytes: number) => randomBytes(bytes).toString('hex');
  await kubectl(['-n', NAMESPACE, 'create', 'secret', 'generic', 'svc-secrets', `--from-literal=CONNECTOR_SECRET_KEY=${hex(32)}`, `--from-literal=CURSOR_SECRET=${hex(24)}`, `--from-literal=RAW_LOG_MASTER_KEY=${hex(32)}`, `--from-literal=IDENTIFIER_HASH_KEYS=${hex(32)},${hex(32)}`]);
  return readFile(path.join(pki, 'ca.crt'), 'utf8');
}

/** Write keys of ten new organisations. */
async function testKeys(db: Db): Promise<{ keys: string[]; orgIds: string[] }> {
  const accounts = new AccountsStore(db);
  const keys: string[] = [];
  const orgIds: string[] = [];
  for (let i = 0; i < 10; i += 1) {
    const org = await accounts.createOrganization({ name: `Helm upgrade under load ${i}` });
    orgIds.push(org.id);
    keys.push((await accounts.createApiKey({ orgId: org.id, type: 'write' })).key);
  }
  return { keys, orgIds };
}

type RolloutSample = Record<string, { wanted: number; ready: number; pods: number }>;

/** Samples, every second, each component's wanted replicas, its ready pods and its pods not terminating. */
function watchRollout(dir: string): { stop: () => Promise<RolloutSample[]> } {
  const samples: RolloutSample[] = [];
  let stopped = false;
  const kube = (args: string[]) => runOk('bash', [KUBE_SH, 'kubectl', path.join(dir, 'cluster'), ...args]);
  const loop = (async () => {
    while (!stopped) {
      const [deployments, pods] = await Promise.all([
        kube(['-n', NAMESPACE, 'get', 'deployments', '-o', 'json']).then((t) => JSON.parse(t) as { items: Deployment[] }),
        kube(['-n', NAMESPACE, 'get', 'pods', '-o', 'json']).then((t) => JSON.parse(t) as { items: Pod[] }),
      ]).catch(() => [undefined, undefined] as const);
      if (deployments && pods) {
        const sample: RolloutSample = {};
        for (const d of deployments.items) {
          const component = d.metadata.labels['app.kubernetes.io/component'] ?? '';
          const own = pods.items.filter((p) => p.metadata.labels['app.kubernetes.io/component'] === component);
          // Terminating pods count for neither: the Deployment's surge does not count them either.
          const live = own.filter((p) => !p.metadata.deletionTimestamp);
          const ready = live.filter((p) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
          sample[component] = { wanted: d.spec.replicas, ready, pods: live.length };
        }
        samples.push(sample);
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return samples;
    },
  };
}

/** The cluster's PostgreSQL on 127.0.0.1 through `kubectl port-forward`. */
async function portForwardedDb(dir: string): Promise<{ db: Db; close: () => Promise<void> }> {
  const port = await freePort();
  const forward: ChildProcess = spawn('bash', [KUBE_SH, 'kubectl', path.join(dir, 'cluster'), '-n', NAMESPACE, 'port-forward', '--address', '127.0.0.1', 'svc/svc-db-rw', `${port}:5432`], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('kubectl port-forward: not forwarding within 30 s')), 30_000);
    forward.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('Forwarding from')) {
        clearTimeout(timer);
        resolve();
      }
    });
    forward.on('exit', (code) => reject(new Error(`kubectl port-forward exited ${code}`)));
  });
  const db = createDb({ url: `postgres://svc:cluster-test-only@127.0.0.1:${port}/svc`, poolMax: 2 });
  return {
    db,
    close: async () => {
      await db.destroy();
      forward.kill('SIGTERM');
    },
  };
}
