import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';

/** infra/observability: the dashboards, the alert rules and their promtool tests. */
export const OBSERVABILITY_DIR = path.resolve(__dirname, '../../../../infra/observability');
export const RULES_FILE = path.join(OBSERVABILITY_DIR, 'prometheus/rules/svc-alerts.yml');
export const RULE_TESTS_FILE = path.join(OBSERVABILITY_DIR, 'prometheus/tests/svc-alerts.test.yml');
export const DASHBOARDS_DIR = path.join(OBSERVABILITY_DIR, 'grafana/dashboards');

/** A PromQL expression and where it was found, e.g. `dashboard svc-overview.json, panel "…"`. */
export interface Expression {
  where: string;
  expr: string;
}

/** Every `expr` of every panel of a Grafana dashboard. */
export function dashboardExpressions(file: string): Expression[] {
  const dashboard = JSON.parse(readFileSync(file, 'utf8')) as { panels?: Array<{ title?: string; targets?: Array<{ expr?: string }> }> };
  return (dashboard.panels ?? []).flatMap((panel) =>
    (panel.targets ?? []).flatMap((t) => (t.expr ? [{ where: `${path.basename(file)}, panel "${panel.title ?? '?'}"`, expr: t.expr }] : [])),
  );
}

/** Every `expr` of every rule of a Prometheus rules file. */
export function ruleExpressions(file: string): Expression[] {
  const rules = parseYaml(readFileSync(file, 'utf8')) as { groups?: Array<{ rules?: Array<{ alert?: string; record?: string; expr?: string }> }> };
  return (rules.groups ?? []).flatMap((g) =>
    (g.rules ?? []).flatMap((r) => (r.expr ? [{ where: `${path.basename(file)}, ${r.alert ?? r.record ?? '?'}`, expr: String(r.expr) }] : [])),
  );
}

/** Prometheus's own PromQL grammar (lezer), loaded once; an ES module, hence the dynamic import. */
const loadPromql = () => import('@prometheus-io/lezer-promql');
let promql: ReturnType<typeof loadPromql> | undefined;

/** The metric names a PromQL expression selects, or why it does not parse. */
export async function metricNames(expr: string): Promise<{ names: string[]; error?: string }> {
  const { parser } = await (promql ??= loadPromql());
  const names = new Set<string>();
  let error: string | undefined;
  parser.parse(expr).iterate({
    enter(node) {
      if (node.type.isError) error ??= `does not parse at ${node.from}: ${JSON.stringify(expr.slice(node.from, node.from + 20))}`;
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') names.add(expr.slice(node.from, node.to));
    },
  });
  return error === undefined ? { names: [...names] } : { names: [...names], error };
}

/** The metric names a Prometheus text exposition declares (`# TYPE` lines), with a histogram's and a summary's series names. */
export function exportedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split('\n')) {
    const m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (!m) continue;
    const [, name, type] = m as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(name + suffix);
  }
  return names;
}

/** For each expression that names a metric none of `exported` declares (or does not parse): why. */
export async function unexportedMetrics(expressions: readonly Expression[], exported: ReadonlySet<string>): Promise<string[]> {
  const problems = await Promise.all(
    expressions.map(async ({ where, expr }) => {
      const { names, error } = await metricNames(expr);
      return [...(error ? [`${where}: ${error}`] : []), ...names.filter((n) => !exported.has(n)).map((n) => `${where}: ${n} is exported by no service`)];
    }),
  );
  return problems.flat();
}
