/**
 * docker-compose.yml started for real, with podman behind docker compose:
 * the product's image built from the root Dockerfile, the official images
 * swapped for local stand-ins (docker-compose.local.yml; no container
 * registry is reachable here). Through the edge, over HTTPS with the edge's
 * own CA trusted explicitly: a batch posted, its profile read back; then the
 * gateway scaled to three, and the stack stopped and removed.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { freePort } from '@svc/runtime';
import { COMPOSE_PROGRAMS, ROOT, buildImages, deployTools, describeWhenPresent, missingPrograms, run, runOk } from './test-support/deployment';
import { answersToEveryDocumentedOperation } from './test-support/documented-operations';
import { startPodmanService, type PodmanService } from './test-support/podman';

const SVC_IMAGE = 'localhost/svc:local';
const PROJECT = `svc-e2e-${process.pid}`;
// A subnet of this run's own, so two runs on one machine never share one.
const NET = `172.30.${16 + (process.pid % 200)}`;
const EDGE_IP = `${NET}.2`;
const FORGED_CLIENT = '203.0.113.9';

interface EdgeResponse {
  status: number;
  body: Record<string, unknown>;
}

describeWhenPresent('docker compose up, for real (podman)', missingPrograms(COMPOSE_PROGRAMS, true), () => {
  let dir: string;
  let podman: PodmanService | undefined;
  let compose: (args: string[], timeoutMs?: number) => Promise<string>;
  let edgePort: number;
  let edgeCa: string;

  /** A request to the edge as a client would make it: https://localhost:<port>, trusting only the edge's CA. */
  function edge(method: string, urlPath: string, key: string, body?: unknown, headers: Record<string, string> = {}): Promise<EdgeResponse> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = https.request(
        {
          host: '127.0.0.1',
          servername: 'localhost',
          port: edgePort,
          method,
          path: `/functions/v1/${urlPath}`,
          ca: edgeCa,
          headers: { host: `localhost:${edgePort}`, authorization: `Bearer ${key}`, ...(payload ? { 'content-type': 'application/json' } : {}), ...headers },
          timeout: 30_000,
        },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} }));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** svcctl in the product's image, as an operator runs it: `docker compose run --rm migrate svcctl ...`. */
  async function svcctl(...words: string[]): Promise<Record<string, unknown>> {
    return JSON.parse(await compose(['run', '--rm', '--no-deps', '-T', 'migrate', 'svcctl', ...words])) as Record<string, unknown>;
  }

  const services = async (): Promise<Array<{ Service: string; Name: string; State: string; Health: string; ExitCode: number }>> =>
    (await compose(['ps', '--all', '--format', 'json']))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { Service: string; Name: string; State: string; Health: string; ExitCode: number });

  beforeAll(async () => {
    const [tools] = await Promise.all([deployTools(), buildImages(SVC_IMAGE)]);
    dir = await mkdtemp(path.join(os.tmpdir(), 'svc-compose-'));
    podman = await startPodmanService(dir);
    edgePort = await freePort();
    const envFile = path.join(dir, '.env');
    // What an operator's .env holds; the secrets fresh for this run.
    await writeFile(
      envFile,
      [
        `POSTGRES_PASSWORD=${randomBytes(16).toString('hex')}`,
        `CONNECTOR_SECRET_KEY=${randomBytes(32).toString('hex')}`,
        `CURSOR_SECRET=${randomBytes(24).toString('hex')}`,
        `RAW_LOG_MASTER_KEY=${randomBytes(32).toString('hex')}`,
        `IDENTIFIER_HASH_KEYS=${randomBytes(32).toString('hex')}`,
        `GRAFANA_ADMIN_PASSWORD=${randomBytes(18).toString('hex')}`,
        `SVC_IMAGE=${SVC_IMAGE}`,
        'EDGE_BIND=127.0.0.1',
        `EDGE_HTTPS_PORT=${edgePort}`,
        `EDGE_SUBNET=${NET}.0/24`,
        `EDGE_IP=${EDGE_IP}`,
        `EDGE_IP_RANGE=${NET}.128/25`,
        '',
      ].join('\n'),
    );
    const base = ['--env-file', envFile, '-f', path.join(ROOT, 'docker-compose.yml'), '-f', path.join(ROOT, 'docker-compose.local.yml'), '-p', PROJECT];
    const dockerHost = podman.dockerHost;
    compose = (args, timeoutMs = 120_000) => runOk(tools.dockerCompose, [...base, ...args], { env: { DOCKER_HOST: dockerHost }, timeoutMs });
    try {
      await compose(['up', '--detach', '--wait', '--wait-timeout', '480'], 540_000);
    } catch (err) {
      const logs = await compose(['logs', '--no-color', '--tail', '30']).catch((e: unknown) => String(e));
      throw new Error(`${(err as Error).message}\n--- logs ---\n${logs}`);
    }
    edgeCa = await compose(['exec', '-T', 'edge', 'cat', '/data/caddy/pki/authorities/local/root.crt']);
  }, 45 * 60_000);

  afterAll(async () => {
    try {
      if (compose) await compose(['down', '--volumes', '--timeout', '30'], 180_000);
    } finally {
      await podman?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    }
  }, 240_000);

  it('ran migrate and topics once, to success, and every service is healthy', async () => {
    const all = await services();
    expect(all.filter((s) => ['migrate', 'topics'].includes(s.Service)).map((s) => [s.Service, s.State, s.ExitCode])).toEqual([
      ['migrate', 'exited', 0],
      ['topics', 'exited', 0],
    ]);
    const withHealthcheck = ['postgres', 'kafka', 'registry', 'ingest-gateway', 'identity-resolver', 'profile-api', 'consent-api', 'conversion-forwarder'];
    expect(all.filter((s) => withHealthcheck.includes(s.Service)).map((s) => [s.Service, s.Health]).sort()).toEqual(withHealthcheck.map((s) => [s, 'healthy']).sort());
    expect(all.find((s) => s.Service === 'edge')?.State).toBe('running');
  });

  it('through the edge over HTTPS: a batch is accepted, and its profile read back from the Profiles API', async () => {
    const org = await svcctl('org', 'create', '--name', 'Compose E2E');
    const write = await svcctl('key', 'create', '--org', String(org.id), '--type', 'write');
    const read = await svcctl('key', 'create', '--org', String(org.id), '--type', 'read');

    const batch = {
      batch: [{ type: 'identify', messageId: 'compose-e2e-1', anonymousId: 'anon-compose', userId: 'user-compose', traits: { email: 'compose@example.com' }, timestamp: new Date().toISOString() }],
    };
    expect(await edge('POST', 'v1-batch', String(write.key), batch)).toMatchObject({ status: 200, body: { success: true, processed: 1, failed: 0 } });

    // The resolver projects it asynchronously: poll until the profile is readable.
    let found: EdgeResponse = { status: 0, body: {} };
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
      found = await edge('GET', 'v1-profiles/search?user_id=user-compose', String(read.key));
      if ((found.body.count as number) > 0) break;
    }
    expect(found).toMatchObject({ status: 200, body: { success: true, count: 1 } });
    const id = (found.body.profiles as Array<{ id: string }>)[0]!.id;
    const detail = await edge('GET', `v1-profiles/${id}`, String(read.key));
    expect(detail).toMatchObject({ status: 200, body: { success: true, profile: { id } } });
    expect(JSON.stringify(detail.body)).toContain('user-compose');

    // Routed by prefix: consent goes to the consent API (the next test reads the address it recorded).
    const consent = await edge('POST', 'v1-consent', String(write.key), { anonymousId: 'anon-compose', purposes: { analytics: true } }, { 'x-forwarded-for': FORGED_CLIENT });
    expect(consent).toMatchObject({ status: 200, body: { success: true } });
  });

  it('every operation of the OpenAPI document is routed through the edge: none answers 404', async () => {
    // The edge helper takes the route without its leading slash.
    const answers = await answersToEveryDocumentedOperation((method, route, key, body) => edge(method, route.slice(1), key, body));
    expect(answers.filter((a) => a.endsWith(' 404'))).toEqual([]);
    expect(answers.length).toBeGreaterThanOrEqual(20);
    // A route nobody serves still gets the API's own JSON 404 through the same edge.
    expect(await edge('GET', 'no-such-route', 'uk_live_not_a_key')).toMatchObject({ status: 404, body: { success: false } });
  });

  it("the image's smoke-test (the Helm chart's `helm test`) passes through the edge", async () => {
    const caFile = path.join(dir, 'edge-ca.crt');
    await writeFile(caFile, edgeCa, { mode: 0o644 });
    const env = ['SMOKE_BASE_URL=https://localhost/functions/v1', 'SMOKE_CONNECT_TO=edge:443', 'SMOKE_CA_FILE=/etc/svc/edge-ca.crt'];
    const out = await compose(['run', '--rm', '--no-deps', '-T', '-v', `${caFile}:/etc/svc/edge-ca.crt:ro`, ...env.flatMap((e) => ['-e', e]), 'ingest-gateway', 'smoke-test'], 180_000);
    expect(out).toContain('profile read back through the edge');
  }, 240_000);

  it("the services see the client the edge saw: the edge's X-Forwarded-For is believed, a client's forged one is not", async () => {
    const ips = (await compose(['exec', '-T', 'postgres', 'psql', '-U', 'svc', '-d', 'svc', '-Atc', 'select host(client_ip) from consent.records'])).trim().split('\n');
    expect(ips).toHaveLength(1);
    expect(ips[0]).toMatch(/^[0-9.]+$/);
    expect(ips[0]).not.toBe(EDGE_IP); // the proxy itself would mean X-Forwarded-For was ignored
    expect(ips[0]).not.toBe(FORGED_CLIENT); // what the client claimed would mean anyone can pick their IP
  });

  it('containers run as a non-root user on a read-only root filesystem', async () => {
    expect((await compose(['exec', '-T', 'profile-api', 'id', '-u'])).trim()).toBe('10001');
    const write = await compose(['exec', '-T', 'profile-api', 'node', '-e', "try { require('fs').writeFileSync('/app/x', '') } catch (e) { console.log(e.code) }"]);
    expect(write.trim()).toBe('EROFS');
  });

  it('the image carries its licence, the product version and the commit it was built from', async () => {
    const labels = JSON.parse(await runOk('podman', ['image', 'inspect', '--format', '{{json .Labels}}', SVC_IMAGE])) as Record<string, string>;
    const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const revision = (await runOk('git', ['-C', ROOT, 'rev-parse', 'HEAD'])).trim();
    expect(labels).toMatchObject({
      'org.opencontainers.image.licenses': 'Apache-2.0',
      'org.opencontainers.image.version': version,
      'org.opencontainers.image.revision': expect.stringMatching(new RegExp(`^${revision}(-dirty)?$`)),
      'org.opencontainers.image.source': expect.any(String),
    });
    expect(await compose(['exec', '-T', 'profile-api', 'head', '-c', '80', '/app/LICENSE'])).toContain('Apache License');
  });

  it('scales the gateway to three, and the edge spreads requests over every replica', async () => {
    await compose(['up', '--detach', '--wait', '--wait-timeout', '300', '--scale', 'ingest-gateway=3'], 360_000);
    const gateways = (await services()).filter((s) => s.Service === 'ingest-gateway');
    expect(gateways.map((g) => g.Health)).toEqual(['healthy', 'healthy', 'healthy']);
    // The edge looks its upstreams up every 5 s; then round robin reaches each replica.
    await new Promise((r) => setTimeout(r, 6_000));
    for (let i = 0; i < 9; i += 1) expect((await edge('POST', 'v1-batch', 'uk_live_not_a_key', { batch: [] })).status).toBe(401);
    const served = await Promise.all(
      [1, 2, 3].map(async (index) => {
        const metrics = await compose(['exec', '-T', '--index', String(index), 'ingest-gateway', 'node', '-e', "fetch('http://127.0.0.1:8080/metrics').then((r) => r.text()).then((t) => process.stdout.write(t))"]);
        const line = metrics.split('\n').find((l) => l.startsWith('http_request_duration_seconds_count{') && l.includes('route="/functions/v1/v1-batch"') && l.includes('status="401"'));
        return Number(line?.split(' ').pop() ?? 0);
      }),
    );
    expect(served.every((n) => n > 0)).toBe(true);
  }, 420_000);

  it('SIGTERM from `docker compose stop` runs each service\'s ordered shutdown: exit 0', async () => {
    await compose(['stop', '--timeout', '40', 'identity-resolver', 'ingest-gateway'], 120_000);
    const stopped = (await services()).filter((s) => ['identity-resolver', 'ingest-gateway'].includes(s.Service));
    expect(stopped.map((s) => [s.State, s.ExitCode])).toEqual(stopped.map(() => ['exited', 0]));
    expect(await compose(['logs', '--no-color', 'identity-resolver'])).toContain('"reason":"SIGTERM","ok":true,"msg":"shutdown finished"');
  }, 180_000);

  it('down removes every container, network and volume of the project', async () => {
    await compose(['down', '--volumes', '--timeout', '30'], 180_000);
    expect((await compose(['ps', '--all', '--quiet'])).trim()).toBe('');
    const volumes = await run('podman', ['volume', 'ls', '--quiet', '--filter', `label=com.docker.compose.project=${PROJECT}`], {
      env: { CONTAINERS_CONF: path.join(ROOT, 'infra/local/podman/containers.conf') },
    });
    expect(volumes).toMatchObject({ code: 0, stdout: '' });
  }, 240_000);
});
