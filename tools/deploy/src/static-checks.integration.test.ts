/**
 * Static checks of the deployment files, each shown able to fail on a
 * deliberately broken copy: the Helm chart (`helm lint --strict`, its values
 * schema, `helm template`), the rendered manifests and the example manifests
 * against the Kubernetes schemas (strict: an unknown field fails), offline,
 * and the compose files through compose's own loader (`docker compose config`);
 * the secured connections: every container of the chart gets its secrets as
 * files, and the documented compose override for managed infrastructure loads.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import { ROOT, STATIC_CHECK_PROGRAMS, deployTools, describeWhenPresent, missingPrograms, run, runOk, type DeployTools } from './test-support/deployment';

const CHART = path.join(ROOT, 'infra/helm/svc');
const PRODUCTION_VALUES = path.join(ROOT, 'infra/helm/ci/production-values.yaml');
const EXAMPLES = ['strimzi-kafka.yaml', 'cloudnativepg-cluster.yaml'].map((f) => path.join(ROOT, 'infra/helm/examples', f));
/** The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest with bundled schemas. */
const KUBE_VERSIONS = ['1.29.0', '1.37.0'];
/** Kinds of operators' custom resources: no schema is bundled for them, and the validator says so. */
const CUSTOM_KINDS = ['ServiceMonitor', 'PrometheusRule', 'Kafka', 'KafkaNodePool', 'Cluster', 'ScheduledBackup'];

describeWhenPresent('deployment files: static checks', missingPrograms(STATIC_CHECK_PROGRAMS), () => {
  let tools: DeployTools;
  let dir: string;
  beforeAll(async () => {
    tools = await deployTools();
    dir = await mkdtemp(path.join(os.tmpdir(), 'svc-static-'));
  }, 20 * 60_000);
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const lint = (chart: string, ...args: string[]) => run(tools.helm, ['lint', '--strict', '--kube-version', KUBE_VERSIONS[0]!, chart, ...args]);
  const template = (chart: string, ...args: string[]) => run(tools.helm, ['template', 'svc', chart, '--kube-version', KUBE_VERSIONS[0]!, ...args]);

  /** Strict validation of `files` against every Kubernetes version; returns the warnings. */
  async function validate(files: string[]): Promise<{ code: number; output: string }> {
    let code = 0;
    let output = '';
    for (const version of KUBE_VERSIONS) {
      const result = await run(tools.kubernetesValidate, ['--strict', '--kubernetes-version', version, ...files]);
      code = Math.max(code, result.code);
      output += result.stdout + result.stderr;
    }
    return { code, output };
  }

  /** The only things validation may pass over: custom resources, by kind. */
  function expectOnlyCustomKindsUnchecked(output: string): void {
    const warnings = output.split('\n').filter((line) => line.startsWith('WARN'));
    for (const warning of warnings) expect(warning).toMatch(new RegExp(`Couldn't find schema for kind (${CUSTOM_KINDS.join('|')}) `));
  }

  async function brokenChart(file: string, from: string, to: string): Promise<string> {
    const copy = path.join(dir, `chart-${path.basename(file, '.yaml')}-${Math.random().toString(36).slice(2)}`);
    await cp(CHART, copy, { recursive: true });
    const text = await readFile(path.join(copy, file), 'utf8');
    expect(text).toContain(from);
    await writeFile(path.join(copy, file), text.replace(from, to));
    return copy;
  }

  it.each([
    ['the default values', []],
    ['production-like values', ['-f', PRODUCTION_VALUES]],
    [
      'values that make the chart keep the secrets',
      ['--set', 'database.existingSecret=', '--set', 'database.url=postgres://svc:pw@db:5432/svc', '--set', 'secrets.existingSecret=', '--set', `secrets.connectorSecretKey=${'ab'.repeat(32)}`, '--set', `secrets.cursorSecret=${'c'.repeat(40)}`, '--set', `secrets.rawLogMasterKey=${'cd'.repeat(32)}`, '--set', `secrets.identifierHashKeys=${'ef'.repeat(32)}\\,${'01'.repeat(32)}`],
    ],
  ])('with %s: lints strictly, renders, and every manifest passes the Kubernetes schemas', async (_name, args) => {
    expect(await lint(CHART, ...args)).toMatchObject({ code: 0 });
    const rendered = path.join(dir, `rendered-${Math.random().toString(36).slice(2)}.yaml`);
    await writeFile(rendered, await runOk(tools.helm, ['template', 'svc', CHART, '--kube-version', KUBE_VERSIONS[0]!, ...args]));
    const { code, output } = await validate([rendered]);
    expect({ code, output }).toMatchObject({ code: 0 });
    expectOnlyCustomKindsUnchecked(output);
    for (const kind of ['Deployment', 'Service', 'PodDisruptionBudget', 'HorizontalPodAutoscaler', 'Ingress', 'Job', 'ConfigMap', 'NetworkPolicy']) {
      expect(output).toContain(`passed for resource ${kind.toLowerCase()}/`);
    }
  });

  it('the example Strimzi and CloudNativePG manifests pass where schemas exist (their registry Deployment and Service)', async () => {
    const { code, output } = await validate(EXAMPLES);
    expect({ code, output }).toMatchObject({ code: 0 });
    expectOnlyCustomKindsUnchecked(output);
    expect(output).toContain('passed for resource deployment/apicurio-registry');
  });

  it('ships infra/observability: the dashboard in a ConfigMap, and the alert rules as a PrometheusRule behind a value', async () => {
    const dashboard = JSON.parse(await readFile(path.join(ROOT, 'infra/observability/grafana/dashboards/svc-overview.json'), 'utf8')) as { title: string };
    const rules = await readFile(path.join(ROOT, 'infra/observability/prometheus/rules/svc-alerts.yml'), 'utf8');
    const alerts = [...rules.matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
    expect(alerts.length).toBeGreaterThan(0);
    const off = await runOk(tools.helm, ['template', 'svc', CHART, '--kube-version', KUBE_VERSIONS[0]!]);
    expect(off).toContain(JSON.stringify(dashboard.title).slice(1, -1));
    expect(off).not.toContain('kind: PrometheusRule');
    const on = await runOk(tools.helm, ['template', 'svc', CHART, '--kube-version', KUBE_VERSIONS[0]!, '--set', 'observability.prometheusRule.enabled=true']);
    expect(on).toContain('kind: PrometheusRule');
    for (const alert of alerts) expect(on).toContain(`alert: ${alert}`);
  });

  it('fails: a wrong value is refused by values.schema.json, naming it', async () => {
    const result = await lint(CHART, '--set', 'ingestGateway.replicas=two', '--set', 'kafka.brokerz=kafka:9092');
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toContain("at '/ingestGateway/replicas': got string, want integer");
    expect(result.stdout + result.stderr).toContain("additional properties 'brokerz' not allowed");
  });

  it("what users of well-kept charts set: a parent chart's globals, an existing ServiceAccount, environment from Secrets, volumes of their own", async () => {
    const args = [
      '--set', 'global.imageRegistry=registry.example.com',
      '--set', 'serviceAccount.create=false', '--set', 'serviceAccount.name=svc-irsa', '--set', 'serviceAccount.automount=true',
      '--set', 'extraEnv[0].name=CONVERSION_META_ACCESS_TOKEN',
      '--set', 'extraEnv[0].valueFrom.secretKeyRef.name=meta', '--set', 'extraEnv[0].valueFrom.secretKeyRef.key=token',
      '--set', 'extraEnvFrom[0].configMapRef.name=svc-extra',
      '--set', 'extraVolumes[0].name=extra-ca', '--set', 'extraVolumes[0].configMap.name=extra-ca',
      '--set', 'extraVolumeMounts[0].name=extra-ca', '--set', 'extraVolumeMounts[0].mountPath=/etc/extra-ca',
    ];
    expect(await lint(CHART, ...args)).toMatchObject({ code: 0 });
    const rendered = await runOk(tools.helm, ['template', 'svc', CHART, '--kube-version', KUBE_VERSIONS[0]!, ...args]);
    const file = path.join(dir, 'rendered-extras.yaml');
    await writeFile(file, rendered);
    expect(await validate([file])).toMatchObject({ code: 0 });
    type Spec = { serviceAccountName: string; automountServiceAccountToken: boolean; volumes: Array<{ name: string }>; containers: Array<{ env: Array<{ name: string; valueFrom?: unknown }>; envFrom?: unknown[]; volumeMounts: Array<{ name: string }> }> };
    const manifests = parseAllDocuments(rendered).map((d) => d.toJS() as { kind: string; metadata: { name: string }; spec: { template?: { spec: Spec } } & Spec } | null);
    expect(manifests.some((m) => m?.kind === 'ServiceAccount')).toBe(false);
    const pods = manifests.flatMap((m) => (m?.kind === 'Deployment' || m?.kind === 'Job' ? [m.spec.template!.spec] : m?.kind === 'Pod' ? [m.spec] : []));
    expect(pods).toHaveLength(8); // five services, two hook Jobs, the helm test pod
    for (const pod of pods) {
      expect({ account: pod.serviceAccountName, token: pod.automountServiceAccountToken }).toEqual({ account: 'svc-irsa', token: true });
      expect(pod.volumes.map((v) => v.name)).toContain('extra-ca');
      const [container] = pod.containers;
      expect(container!.env.find((e) => e.name === 'CONVERSION_META_ACCESS_TOKEN')).toEqual({ name: 'CONVERSION_META_ACCESS_TOKEN', valueFrom: { secretKeyRef: { name: 'meta', key: 'token' } } });
      expect(container!.envFrom).toEqual([{ configMapRef: { name: 'svc-extra' } }]);
      expect(container!.volumeMounts.map((m) => m.name)).toContain('extra-ca');
    }
  });

  it('by default: a ServiceAccount of the release with no API token, which the services use and the pre-install hooks (before it exists) do not', async () => {
    type Spec = { serviceAccountName: string; automountServiceAccountToken: boolean };
    const manifests = parseAllDocuments(await runOk(tools.helm, ['template', 'svc', CHART, '--kube-version', KUBE_VERSIONS[0]!]))
      .map((d) => d.toJS() as { kind: string; metadata: { name: string }; automountServiceAccountToken?: boolean; spec: { template?: { spec: Spec } } & Spec } | null)
      .filter((m) => m !== null);
    expect(manifests.filter((m) => m!.kind === 'ServiceAccount').map((m) => [m!.metadata.name, m!.automountServiceAccountToken])).toEqual([['svc', false]]);
    const accounts = manifests.flatMap((m) => (m!.kind === 'Deployment' || m!.kind === 'Job' ? [[m!.kind, m!.spec.template!.spec.serviceAccountName, m!.spec.template!.spec.automountServiceAccountToken]] : []));
    expect(accounts.filter(([kind]) => kind === 'Deployment')).toEqual(Array(5).fill(['Deployment', 'svc', false]));
    expect(accounts.filter(([kind]) => kind === 'Job')).toEqual(Array(2).fill(['Job', 'default', false]));
  });

  it('production-like values: every Deployment and both hook Jobs read the same secured settings, every secret from a read-only file', async () => {
    type Container = { name: string; env: Array<{ name: string; value?: string; valueFrom?: unknown }>; volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }> };
    type Pod = { containers: Container[]; volumes: Array<{ name: string; projected?: { sources: Array<{ secret: { name: string; items: Array<{ key: string; path: string }> } }> } }> };
    const manifests = parseAllDocuments(await runOk(tools.helm, ['template', 'svc', CHART, '--kube-version', KUBE_VERSIONS[0]!, '-f', PRODUCTION_VALUES]))
      .map((doc) => doc.toJS() as { kind: string; metadata: { name: string }; spec: { template: { spec: Pod } } } | null)
      .filter((m) => m !== null && (m.kind === 'Deployment' || m.kind === 'Job'));
    expect(manifests.map((m) => m!.metadata.name).sort()).toEqual(
      ['consent-api', 'conversion-forwarder', 'identity-resolver', 'ingest-gateway', 'migrate', 'profile-api', 'topics'].map((n) => `svc-${n}`),
    );
    const shared = {
      DATABASE_SSL_MODE: 'verify-full',
      DATABASE_URL_FILE: '/etc/svc/secrets/database/url',
      DATABASE_SSL_CA_FILE: '/etc/svc/secrets/database/ca.crt',
      DATABASE_SSL_CERT_FILE: '/etc/svc/secrets/database/tls.crt',
      DATABASE_SSL_KEY_FILE: '/etc/svc/secrets/database/tls.key',
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: 'svc',
      KAFKA_SASL_PASSWORD_FILE: '/etc/svc/secrets/kafka/sasl-password',
      KAFKA_SSL_CA_FILE: '/etc/svc/secrets/kafka/ca.crt',
      KAFKA_SSL_CERT_FILE: '/etc/svc/secrets/kafka/tls.crt',
      KAFKA_SSL_KEY_FILE: '/etc/svc/secrets/kafka/tls.key',
      KAFKA_REPLICATION_FACTOR: '3',
      KAFKA_MIN_INSYNC_REPLICAS: '2',
      SCHEMA_REGISTRY_URL: 'https://registry.example.com/apis/ccompat/v7',
      SCHEMA_REGISTRY_USERNAME: 'svc',
      SCHEMA_REGISTRY_CA_FILE: '/etc/svc/secrets/schema-registry/ca.crt',
      SCHEMA_REGISTRY_PASSWORD_FILE: '/etc/svc/secrets/schema-registry/password',
    };
    const secretVariables = ['DATABASE_URL', 'KAFKA_SASL_PASSWORD', 'SCHEMA_REGISTRY_PASSWORD', 'CONNECTOR_SECRET_KEY', 'CURSOR_SECRET', 'RAW_LOG_MASTER_KEY', 'RAW_LOG_MASTER_KEYS_RETIRED', 'IDENTIFIER_HASH_KEYS'];
    /** The raw log's master key: the gateway seals with it, the resolver opens; no other pod holds it. */
    const withMasterKey = ['svc-ingest-gateway', 'svc-identity-resolver'];
    for (const manifest of manifests) {
      const pod = manifest!.spec.template.spec;
      const [container] = pod.containers;
      const env = Object.fromEntries(container!.env.map((e) => [e.name, e.value]));
      expect({ name: manifest!.metadata.name, env }).toMatchObject({ env: shared });
      expect({ name: manifest!.metadata.name, masterKey: env.RAW_LOG_MASTER_KEY_FILE }).toEqual({
        name: manifest!.metadata.name,
        masterKey: withMasterKey.includes(manifest!.metadata.name) ? '/etc/svc/secrets/app/raw-log-master-key' : undefined,
      });
      // The identifier hashes' keys: every service hashes identifiers (or matches tombstones by them); the hook Jobs do not.
      expect({ name: manifest!.metadata.name, hashKeys: env.IDENTIFIER_HASH_KEYS_FILE }).toEqual({
        name: manifest!.metadata.name,
        hashKeys: manifest!.kind === 'Deployment' ? '/etc/svc/secrets/app/identifier-hash-keys' : undefined,
      });
      // No secret as a value or from secretKeyRef: only their *_FILE paths.
      expect(container!.env.filter((e) => e.valueFrom !== undefined || secretVariables.includes(e.name))).toEqual([]);
      expect(container!.volumeMounts).toContainEqual({ name: 'secrets', mountPath: '/etc/svc/secrets', readOnly: true });
      // Every *_FILE names a file the projected volume holds.
      const files = pod.volumes.find((v) => v.name === 'secrets')!.projected!.sources.flatMap((source) => source.secret.items.map((item) => `/etc/svc/secrets/${item.path}`));
      const named = Object.entries(env).filter(([name]) => name.endsWith('_FILE')).map(([, value]) => value);
      expect(files.sort()).toEqual([...named].sort());
    }
  });

  it.each([
    ['SASL without its login', ['--set', 'kafka.securityProtocol=SASL_SSL', '--set', 'kafka.sasl.mechanism=SCRAM-SHA-512'], 'kafka.sasl.username'],
    ['a Kafka CA with PLAINTEXT', ['--set', 'kafka.tls.caSecret=kafka-ca'], 'kafka.securityProtocol PLAINTEXT does not use TLS'],
    ['more in-sync replicas than replicas', ['--set', 'kafka.replicationFactor=1'], 'kafka.minInsyncReplicas must not exceed kafka.replicationFactor'],
    ['a registry password without its user', ['--set', 'schemaRegistry.existingSecret=registry-auth'], 'schemaRegistry.existingSecret needs schemaRegistry.username'],
    ['a PostgreSQL CA without a TLS mode', ['--set', 'database.tls.caSecret=svc-db-ca'], 'database.tls.mode'],
    ['the former kafka.schemaRegistryUrl', ['--set', 'kafka.schemaRegistryUrl=http://registry:8080'], 'set schemaRegistry.url instead'],
  ])('fails: %s, naming the values to change', async (_name, args, message) => {
    const result = await template(CHART, ...args);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(message);
  });

  it('fails: neither an existing Secret nor the values for the chart to keep', async () => {
    const result = await template(CHART, '--set', 'secrets.existingSecret=');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/secrets/);
  });

  it('fails: a template that is not valid YAML', async () => {
    const chart = await brokenChart('templates/ingress.yaml', 'pathType: Prefix', 'pathType: Prefix\n          : broken: [');
    expect((await lint(chart)).code).not.toBe(0);
  });

  it('fails: a manifest with a field Kubernetes does not have', async () => {
    const chart = await brokenChart('templates/deployments.yaml', 'revisionHistoryLimit: 5', 'revisionHistoryLimit: 5\n  replica: 2');
    expect((await lint(chart)).code).toBe(0); // helm itself does not know Kubernetes' fields...
    const rendered = path.join(dir, 'broken-field.yaml');
    await writeFile(rendered, await runOk(tools.helm, ['template', 'svc', chart, '--kube-version', KUBE_VERSIONS[0]!]));
    const { code, output } = await validate([rendered]); // ...the schemas do
    expect(code).not.toBe(0);
    expect(output).toContain("Additional properties are not allowed ('replica' was unexpected)");
  });

  describeCompose();

  function describeCompose(): void {
    /** .env as an operator makes it: .env.example with its six secrets set (dummies here). */
    let envLines: string[];
    beforeAll(async () => {
      const secrets: Record<string, string> = { POSTGRES_PASSWORD: 'not-a-secret', CONNECTOR_SECRET_KEY: 'ab'.repeat(32), CURSOR_SECRET: 'c'.repeat(40), RAW_LOG_MASTER_KEY: 'cd'.repeat(32), IDENTIFIER_HASH_KEYS: 'ef'.repeat(32), GRAFANA_ADMIN_PASSWORD: 'not-admin' };
      envLines = (await readFile(path.join(ROOT, '.env.example'), 'utf8')).split('\n').map((line) => {
        const name = line.slice(0, line.indexOf('='));
        return line === `${name}=` && secrets[name] ? `${name}=${secrets[name]}` : line;
      });
      expect(envLines.filter((line) => /^(POSTGRES_PASSWORD|CONNECTOR_SECRET_KEY|CURSOR_SECRET|RAW_LOG_MASTER_KEY|IDENTIFIER_HASH_KEYS|GRAFANA_ADMIN_PASSWORD)=.+/.test(line))).toHaveLength(6);
    });
    async function envFileOf(env: string[]): Promise<string> {
      const envFile = path.join(dir, `compose-${Math.random().toString(36).slice(2)}.env`);
      await writeFile(envFile, `${env.join('\n')}\n`);
      return envFile;
    }
    /** The loader on `files`, resolved from the repository root as `docker compose` run there does. */
    async function config(files: string[], env = envLines) {
      return run(tools.dockerCompose, ['--project-directory', ROOT, '--env-file', await envFileOf(env), ...files.flatMap((f) => ['-f', f]), 'config', '--quiet']);
    }

    it.each([
      ['docker-compose.yml', ['docker-compose.yml']],
      ['docker-compose.yml with docker-compose.local.yml', ['docker-compose.yml', 'docker-compose.local.yml']],
    ])('compose: %s passes the compose-spec loader', async (_name, files) => {
      expect(await config(files.map((f) => path.join(ROOT, f)))).toMatchObject({ code: 0, stderr: '' });
    });

    it('compose: the override of docs/operations.md for managed Kafka, registry and PostgreSQL loads, with .env.example\'s settings for it', async () => {
      const docs = await readFile(path.join(ROOT, 'docs/operations.md'), 'utf8');
      const block = /```yaml\n((?:[ \t]*)# docker-compose\.managed\.yml[\s\S]*?)\n[ \t]*```/.exec(docs)?.[1];
      expect(block).toBeDefined();
      const indent = /^[ \t]*/.exec(block!)![0];
      const override = path.join(dir, 'docker-compose.managed.yml');
      await writeFile(override, `${block!.split('\n').map((line) => line.slice(indent.length)).join('\n')}\n`);
      // .env as the operator makes it for the override: its commented settings switched on.
      const managedEnv = envLines.map((line) => (/^#(KAFKA|SCHEMA_REGISTRY)_[A-Z_]+=/.test(line) ? line.slice(1) : line));
      expect(managedEnv.filter((line) => /^(KAFKA_BROKERS|KAFKA_SASL_USERNAME|SCHEMA_REGISTRY_URL|SCHEMA_REGISTRY_USERNAME)=.+/.test(line))).toHaveLength(4);
      const files = [path.join(ROOT, 'docker-compose.yml'), override];
      const result = await run(tools.dockerCompose, ['--project-directory', ROOT, '--env-file', await envFileOf(managedEnv), ...files.flatMap((f) => ['-f', f]), 'config', '--format', 'json']);
      expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
      type Service = { environment?: Record<string, string | null>; secrets?: Array<{ source: string }>; depends_on?: Record<string, unknown> };
      const services = (JSON.parse(result.stdout) as { services: Record<string, Service> }).services;
      // The stack's own PostgreSQL, broker and registry do not start; nothing waits for them.
      expect(Object.keys(services).sort()).toEqual(['consent-api', 'conversion-forwarder', 'edge', 'identity-resolver', 'ingest-gateway', 'migrate', 'profile-api', 'topics']);
      for (const name of ['migrate', 'topics', 'ingest-gateway', 'identity-resolver', 'profile-api', 'consent-api', 'conversion-forwarder']) {
        const service = services[name]!;
        expect({ name, environment: service.environment }).toMatchObject({
          environment: {
            DATABASE_URL: '',
            DATABASE_URL_FILE: '/run/secrets/database_url',
            DATABASE_SSL_MODE: 'verify-full',
            KAFKA_BROKERS: 'b-1.kafka.example.com:9096,b-2.kafka.example.com:9096,b-3.kafka.example.com:9096',
            KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
            KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
            KAFKA_SASL_PASSWORD_FILE: '/run/secrets/kafka_sasl_password',
            KAFKA_REPLICATION_FACTOR: '3',
            KAFKA_MIN_INSYNC_REPLICAS: '2',
            SCHEMA_REGISTRY_URL: 'https://registry.example.com/apis/ccompat/v7',
            SCHEMA_REGISTRY_PASSWORD_FILE: '/run/secrets/schema_registry_password',
          },
        });
        expect(service.secrets?.map((s) => s.source).sort()).toEqual(['database_url', 'kafka_sasl_password', 'schema_registry_password']);
        expect(Object.keys(service.depends_on ?? {}).filter((d) => ['postgres', 'kafka', 'registry'].includes(d))).toEqual([]);
      }
    });

    it('compose: the stack\'s one broker gets topics with one replica', async () => {
      const result = await run(tools.dockerCompose, ['--project-directory', ROOT, '--env-file', await envFileOf(envLines), '-f', path.join(ROOT, 'docker-compose.yml'), 'config', '--format', 'json']);
      expect(result.code).toBe(0);
      const services = (JSON.parse(result.stdout) as { services: Record<string, { environment?: Record<string, string> }> }).services;
      for (const name of ['migrate', 'topics', 'ingest-gateway', 'identity-resolver', 'profile-api', 'consent-api', 'conversion-forwarder']) {
        expect({ name, environment: services[name]!.environment }).toMatchObject({ environment: { KAFKA_REPLICATION_FACTOR: '1', KAFKA_MIN_INSYNC_REPLICAS: '1' } });
      }
    });

    it('compose: the gateway, the resolver and migrate (where svcctl runs) get the one raw-log master key of .env, no other service', async () => {
      const result = await run(tools.dockerCompose, ['--project-directory', ROOT, '--env-file', await envFileOf(envLines), '-f', path.join(ROOT, 'docker-compose.yml'), 'config', '--format', 'json']);
      expect(result.code).toBe(0);
      const services = (JSON.parse(result.stdout) as { services: Record<string, { environment?: Record<string, string> }> }).services;
      const holders = Object.entries(services).filter(([, service]) => service.environment?.RAW_LOG_MASTER_KEY !== undefined);
      expect(holders.map(([name]) => name).sort()).toEqual(['identity-resolver', 'ingest-gateway', 'migrate']);
      for (const [name, service] of holders) expect({ name, key: service.environment!.RAW_LOG_MASTER_KEY }).toEqual({ name, key: 'cd'.repeat(32) });
    });

    it('compose: every service that hashes identifiers, and migrate (where svcctl runs), gets the one list of identifier hash keys of .env', async () => {
      const result = await run(tools.dockerCompose, ['--project-directory', ROOT, '--env-file', await envFileOf(envLines), '-f', path.join(ROOT, 'docker-compose.yml'), 'config', '--format', 'json']);
      expect(result.code).toBe(0);
      const services = (JSON.parse(result.stdout) as { services: Record<string, { environment?: Record<string, string> }> }).services;
      const holders = Object.entries(services).filter(([, service]) => service.environment?.IDENTIFIER_HASH_KEYS !== undefined);
      expect(holders.map(([name]) => name).sort()).toEqual(['consent-api', 'conversion-forwarder', 'identity-resolver', 'ingest-gateway', 'migrate', 'profile-api']);
      for (const [name, service] of holders) expect({ name, keys: service.environment!.IDENTIFIER_HASH_KEYS }).toEqual({ name, keys: 'ef'.repeat(32) });
    });

    it('compose fails: a dependency condition compose does not know', async () => {
      const text = await readFile(path.join(ROOT, 'docker-compose.yml'), 'utf8');
      expect(text).toContain('condition: service_completed_successfully');
      const broken = path.join(dir, 'broken-compose.yml');
      await writeFile(broken, text.replace('condition: service_completed_successfully', 'condition: service_completed'));
      const result = await config([broken]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/condition/);
    });

    it.each(['POSTGRES_PASSWORD', 'GRAFANA_ADMIN_PASSWORD'])('compose fails: a secret missing from the env file, naming it: %s', async (secret) => {
      const result = await config([path.join(ROOT, 'docker-compose.yml')], envLines.filter((line) => !line.startsWith(`${secret}=`)));
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(`set ${secret} in .env`);
    });
  }
});
