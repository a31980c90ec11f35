import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { runNode } from '@svc/testkit';
import { parse as parseYaml } from 'yaml';

/**
 * Every alert has a runbook: its `runbook_url` names a section of
 * docs/runbooks.md, and the section says what the alert means, what to look
 * at and what to do. What a runbook points at exists: the dashboard panels
 * it names are panels of the dashboard, and the svcctl commands it names are
 * commands (`svcctl help <command>` knows them).
 */
const ROOT = path.resolve(__dirname, '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

interface Rule {
  alert?: string;
  annotations?: Record<string, string>;
}
const alerts = (parseYaml(read('infra/observability/prometheus/rules/svc-alerts.yml')) as { groups: Array<{ rules: Rule[] }> }).groups
  .flatMap((g) => g.rules)
  .filter((r): r is Rule & { alert: string } => r.alert !== undefined);

const runbooks = read('docs/runbooks.md');
/** GitHub's anchor of a heading: lower case, spaces to dashes, punctuation dropped. */
const anchor = (heading: string) => heading.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');
const sections = new Map(
  runbooks
    .split(/^## /m)
    .slice(1)
    .map((section) => [anchor(section.split('\n')[0]!), section] as const),
);

const panelTitles = new Set(
  (JSON.parse(read('infra/observability/grafana/dashboards/svc-overview.json')) as { panels: Array<{ title?: string }> }).panels.map((p) => p.title),
);
const SVCCTL = path.join(ROOT, 'tools/svcctl/dist/main.js');

describe('runbooks', () => {
  it('there are alerts to hold', () => {
    expect(alerts.length).toBeGreaterThanOrEqual(9);
  });

  it.each(alerts.map((a) => [a.alert, a] as [string, Rule & { alert: string }]))('%s has a runbook section: what it means, what to look at, what to do', (_, alert) => {
    const url = alert.annotations?.runbook_url ?? '';
    expect(url).toMatch(/^docs\/runbooks\.md#[a-z0-9-]+$/);
    const section = sections.get(url.split('#')[1]!);
    expect(section).toBeDefined();
    expect(section!.split('\n')[0]).toBe(alert.alert);
    for (const part of ['**Means.**', '**Look at.**', '**Do.**']) expect(section).toContain(part);
  });

  it('every section is an alert’s', () => {
    expect([...sections.keys()].sort()).toEqual(alerts.map((a) => anchor(a.alert)).sort());
  });

  // A list item that starts with a panel (`- Panel *…*`, `- *…*`) names panels in italics, however many.
  const items = runbooks.split(/\n(?=- |\n)/).filter((item) => /^- (Panels? )?\*/.test(item));
  const panels = new Set(items.flatMap((item) => [...item.matchAll(/\*([^*]+)\*/g)].map((m) => m[1]!.replace(/\s+/g, ' '))));
  it.each([...panels].map((t) => [t]))('names a panel of the dashboard: %s', (title) => {
    expect(panelTitles).toContain(title);
  });

  const commands = [...new Set([...runbooks.matchAll(/`svcctl ([a-z-]+(?: [a-z-]+)?)/g)].map((m) => m[1]!))];
  it.each(commands.map((c) => [c]))('names an svcctl command: %s', async (command) => {
    // `erase status` and `erase` are both commands: the two words first, then the first.
    const two = await runNode(SVCCTL, ['help', ...command.split(' ')]);
    const one = two.code === 0 ? two : await runNode(SVCCTL, ['help', command.split(' ')[0]!]);
    expect(one.code).toBe(0);
  });
});
