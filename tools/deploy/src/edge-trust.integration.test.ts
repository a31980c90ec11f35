/**
 * Trust at the edge, as the Helm chart deploys it with its default values:
 * the TRUSTED_PROXIES the gateway's Deployment gets (rendered by the real
 * helm) is fed to the real HTTP layer (`serveHttp`), and a request that is
 * not from a trusted proxy cannot choose its client IP (X-Forwarded-For) nor
 * pass as HTTPS (X-Forwarded-Proto). The positive control shows the probe is
 * not vacuous: once its address is trusted, the same headers are believed.
 * And the chart's NetworkPolicies let only the ingress controller's pods
 * reach the routed services, on their http port only.
 */
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { beforeAll, expect, it } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import { clientIp, createLogger, createMetrics, httpServiceConfigSpec, loadConfig, serveHttp } from '@svc/runtime';
import { ROOT, STATIC_CHECK_PROGRAMS, deployTools, describeWhenPresent, missingPrograms, runOk, type DeployTools } from './test-support/deployment';

const CHART = path.join(ROOT, 'infra/helm/svc');
const FORGED_CLIENT = '203.0.113.9';
/** Where pods, nodes and load balancers live in common clusters: none may be trusted by default. */
const CLUSTER_ADDRESSES = ['10.0.0.7', '10.244.3.17', '172.17.0.5', '172.31.255.1', '192.168.1.20', '100.64.0.9', '127.0.0.1', 'fd00::1', '::1'];
const ROUTED = ['ingest-gateway', 'profile-api', 'consent-api'];
const UNROUTED = ['identity-resolver', 'conversion-forwarder'];

interface Manifest {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

describeWhenPresent('the chart trusts no proxy by default, and only the ingress controller reaches the services', missingPrograms(STATIC_CHECK_PROGRAMS), () => {
  let tools: DeployTools;
  beforeAll(async () => {
    tools = await deployTools();
  }, 20 * 60_000);

  async function render(...args: string[]): Promise<Manifest[]> {
    const out = await runOk(tools.helm, ['template', 'svc', CHART, '--kube-version', '1.29.0', ...args]);
    return parseAllDocuments(out)
      .map((doc) => doc.toJS() as Manifest | null)
      .filter((m): m is Manifest => m !== null);
  }
  const find = (manifests: Manifest[], kind: string, name: string): Manifest => {
    const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
    if (!found) throw new Error(`no ${kind} ${name} rendered`);
    return found;
  };
  /** The plain-value environment of a Deployment's one container. */
  function containerEnv(deployment: Manifest): Record<string, string> {
    const [container] = deployment.spec.template.spec.containers as Array<{ env: Array<{ name: string; value?: string }> }>;
    return Object.fromEntries(container!.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
  }

  /** The real HTTP layer with `env` parsed as a service parses it, and a route echoing the client IP the runtime computes. */
  async function serve(env: Record<string, string>) {
    const config = loadConfig(httpServiceConfigSpec, { ...env, HOST: '127.0.0.1', PORT: '0' });
    const running = await serveHttp({
      config,
      logger: createLogger({ name: 'edge-trust', level: 'silent' }),
      metrics: createMetrics({ collectDefaultMetrics: false }),
      readiness: () => Promise.resolve({ checks: {} }),
      mount: (router) => router.get('/whoami', (req, res) => void res.json({ clientIp: clientIp(req, config.TRUSTED_PROXIES) })),
    });
    const forged = async () => {
      const res = await fetch(`${running.url}/functions/v1/whoami`, { headers: { 'X-Forwarded-For': FORGED_CLIENT, 'X-Forwarded-Proto': 'https' } });
      return { status: res.status, body: (await res.json()) as { clientIp?: string; code?: string } };
    };
    return { config, forged, close: () => running.close() };
  }

  it('the gateway gets an empty TRUSTED_PROXIES: forged X-Forwarded-For and X-Forwarded-Proto from 127.0.0.1 are ignored', async () => {
    const env = containerEnv(find(await render(), 'Deployment', 'svc-ingest-gateway'));
    expect(env).toHaveProperty('TRUSTED_PROXIES');
    expect(env.REQUIRE_HTTPS).toBe('true');

    // As deployed (REQUIRE_HTTPS on): the forged X-Forwarded-Proto does not make it HTTPS.
    const deployed = await serve(env);
    try {
      expect(await deployed.forged()).toMatchObject({ status: 403, body: { code: 'https_required' } });
    } finally {
      await deployed.close();
    }

    // The same trusted proxies without the HTTPS rule, to see the client IP: the socket's, not the forged one.
    const plain = await serve({ ...env, REQUIRE_HTTPS: 'false' });
    try {
      expect(await plain.forged()).toEqual({ status: 200, body: { clientIp: '127.0.0.1' } });
      // Nor would any other peer address of a cluster be believed.
      for (const remoteAddress of CLUSTER_ADDRESSES) {
        const req = { socket: { remoteAddress }, headers: { 'x-forwarded-for': FORGED_CLIENT } } as unknown as IncomingMessage;
        expect({ remoteAddress, seen: clientIp(req, plain.config.TRUSTED_PROXIES) }).toEqual({ remoteAddress, seen: remoteAddress });
      }
    } finally {
      await plain.close();
    }
    // Trust nothing: the operator names the ingress controller's addresses.
    expect(env.TRUSTED_PROXIES).toBe('');
  });

  it('control: once 127.0.0.1 is a trusted proxy (config.trustedProxies), the same headers are believed', async () => {
    const env = containerEnv(find(await render('--set', 'config.trustedProxies={127.0.0.1}'), 'Deployment', 'svc-ingest-gateway'));
    expect(env.TRUSTED_PROXIES).toBe('127.0.0.1');
    const trusting = await serve(env);
    try {
      expect(await trusting.forged()).toEqual({ status: 200, body: { clientIp: FORGED_CLIENT } });
    } finally {
      await trusting.close();
    }
  });

  it('NetworkPolicy: only the ingress controller reaches the routed services, on the http port only; nobody else reaches any service', async () => {
    const manifests = await render();
    const policies = manifests.filter((m) => m.kind === 'NetworkPolicy');
    expect(policies.map((p) => p.metadata.name).sort()).toEqual([...ROUTED, ...UNROUTED].map((c) => `svc-${c}`).sort());
    const ingressController = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } },
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'ingress-nginx' } },
    };
    for (const component of [...ROUTED, ...UNROUTED]) {
      const policy = find(manifests, 'NetworkPolicy', `svc-${component}`);
      const deployment = find(manifests, 'Deployment', `svc-${component}`);
      // It selects the service's pods, restricts what comes in, and leaves egress open.
      expect(policy.spec.podSelector).toEqual({ matchLabels: deployment.spec.selector.matchLabels });
      expect(policy.spec.policyTypes).toEqual(['Ingress']);
      expect(policy.spec.ingress).toEqual(ROUTED.includes(component) ? [{ from: [ingressController], ports: [{ port: 'http', protocol: 'TCP' }] }] : []);
      // `http` is the container's one port, the one serving the API and /metrics.
      expect(deployment.spec.template.spec.containers[0].ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    }
    // The hook Jobs are not selected: they listen on nothing and must run whatever the policies say.
    for (const job of manifests.filter((m) => m.kind === 'Job')) {
      const labels = job.spec.template.metadata.labels as Record<string, string>;
      for (const policy of policies) {
        const selected = Object.entries(policy.spec.podSelector.matchLabels as Record<string, string>).every(([k, v]) => labels[k] === v);
        expect({ job: job.metadata.name, policy: policy.metadata.name, selected }).toMatchObject({ selected: false });
      }
    }
  });

  it('NetworkPolicy: extraIngress peers (Prometheus) reach every service on the http port; disabled, none is rendered', async () => {
    const prometheus = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } };
    const manifests = await render('--set', 'networkPolicy.extraIngress[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring');
    for (const component of [...ROUTED, ...UNROUTED]) {
      const [rule, ...more] = find(manifests, 'NetworkPolicy', `svc-${component}`).spec.ingress as Array<{ from: unknown[]; ports: unknown[] }>;
      expect(more).toEqual([]);
      expect(rule!.from).toContainEqual(prometheus);
      expect(rule!.from).toHaveLength(ROUTED.includes(component) ? 2 : 1);
      expect(rule!.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
    }
    expect((await render('--set', 'networkPolicy.enabled=false')).filter((m) => m.kind === 'NetworkPolicy')).toEqual([]);
  });
});
