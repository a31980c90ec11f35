/**
 * Static checks of the deployment files, each shown able to fail on a
 * deliberately broken copy: the Helm chart (`helm lint --strict`, its values
 * schema, `helm template`), the rendered manifests and the example manifests
 * against the Kubernetes schemas (strict: an unknown field fails), offline,
 * and the compose files through compose's own loader (`docker compose config`).
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
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
      ['--set', 'database.existingSecret=', '--set', 'database.url=postgres://svc:pw@db:5432/svc', '--set', 'secrets.existingSecret=', '--set', `secrets.connectorSecretKey=${'ab'.repeat(32)}`, '--set', `secrets.cursorSecret=${'c'.repeat(40)}`],
    ],
  ])('with %s: lints strictly, renders, and every manifest passes the Kubernetes schemas', async (_name, args) => {
    expect(await lint(CHART, ...args)).toMatchObject({ code: 0 });
    const rendered = path.join(dir, `rendered-${Math.random().toString(36).slice(2)}.yaml`);
    await writeFile(rendered, await runOk(tools.helm, ['template', 'svc', CHART, '--kube-version', KUBE_VERSIONS[0]!, ...args]));
    const { code, output } = await validate([rendered]);
    expect({ code, output }).toMatchObject({ code: 0 });
    expectOnlyCustomKindsUnchecked(output);
    for (const kind of ['Deployment', 'Service', 'PodDisruptionBudget', 'HorizontalPodAutoscaler', 'Ingress', 'Job', 'ConfigMap']) {
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
    /** .env as an operator makes it: .env.example with its three secrets set (dummies here). */
    let envLines: string[];
    beforeAll(async () => {
      const secrets: Record<string, string> = { POSTGRES_PASSWORD: 'not-a-secret', CONNECTOR_SECRET_KEY: 'ab'.repeat(32), CURSOR_SECRET: 'c'.repeat(40) };
      envLines = (await readFile(path.join(ROOT, '.env.example'), 'utf8')).split('\n').map((line) => {
        const name = line.slice(0, line.indexOf('='));
        return line === `${name}=` && secrets[name] ? `${name}=${secrets[name]}` : line;
      });
      expect(envLines.filter((line) => /^(POSTGRES_PASSWORD|CONNECTOR_SECRET_KEY|CURSOR_SECRET)=.+/.test(line))).toHaveLength(3);
    });
    /** The loader on `files`, resolved from the repository root as `docker compose` run there does. */
    async function config(files: string[], env = envLines) {
      const envFile = path.join(dir, `compose-${Math.random().toString(36).slice(2)}.env`);
      await writeFile(envFile, `${env.join('\n')}\n`);
      return run(tools.dockerCompose, ['--project-directory', ROOT, '--env-file', envFile, ...files.flatMap((f) => ['-f', f]), 'config', '--quiet']);
    }

    it.each([
      ['docker-compose.yml', ['docker-compose.yml']],
      ['docker-compose.yml with docker-compose.local.yml', ['docker-compose.yml', 'docker-compose.local.yml']],
    ])('compose: %s passes the compose-spec loader', async (_name, files) => {
      expect(await config(files.map((f) => path.join(ROOT, f)))).toMatchObject({ code: 0, stderr: '' });
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

    it('compose fails: a secret missing from the env file, naming it', async () => {
      const result = await config([path.join(ROOT, 'docker-compose.yml')], envLines.filter((line) => !line.startsWith('POSTGRES_PASSWORD=')));
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('set POSTGRES_PASSWORD in .env');
    });
  }
});
