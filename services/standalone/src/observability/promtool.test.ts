import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OBSERVABILITY_DIR, RULES_FILE, RULE_TESTS_FILE } from '../test-support/observability-files';

/**
 * `promtool check rules` and `promtool test rules` over the alert rules and
 * their unit tests, with promtool built from its Go module by
 * infra/observability/install-promtool.sh (which .ci/run runs; cached).
 * Each check is also shown to fail: on a rules file with a syntax error, and
 * on one whose alert no longer fires when its test says it must.
 */
const run = promisify(execFile);
const INSTALL = path.join(OBSERVABILITY_DIR, 'install-promtool.sh');

let promtool: string | undefined;
const work = mkdtempSync(path.join(os.tmpdir(), 'svc-promtool-'));
beforeAll(async () => {
  try {
    promtool = (await run('bash', [INSTALL, '--if-installed'])).stdout.trim();
  } catch {
    promtool = undefined;
  }
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function promtoolRun(args: string[]): Promise<{ ok: boolean; output: string }> {
  if (!promtool) {
    if (process.env.REQUIRE_INFRA === '1') throw new Error(`REQUIRE_INFRA=1 and promtool is not built: run ${INSTALL}`);
    console.warn(`*** promtool checks SKIPPED: promtool is not built; run ${INSTALL}`);
    return { ok: true, output: 'skipped' };
  }
  try {
    const { stdout, stderr } = await run(promtool, args);
    return { ok: true, output: stdout + stderr };
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    return { ok: false, output: stdout + stderr };
  }
}

/** A copy of the rules (changed by `edit`) beside a copy of the rule tests that reads it. */
function copies(edit: (rules: string) => string): { rules: string; tests: string } {
  const dir = mkdtempSync(path.join(work, 'case-'));
  const rules = path.join(dir, 'rules.yml');
  const tests = path.join(dir, 'rules.test.yml');
  const original = readFileSync(RULES_FILE, 'utf8');
  const edited = edit(original);
  if (edited === original) throw new Error('the edit changed nothing: the case would prove nothing');
  writeFileSync(rules, edited);
  writeFileSync(tests, readFileSync(RULE_TESTS_FILE, 'utf8').replace('../rules/svc-alerts.yml', 'rules.yml'));
  return { rules, tests };
}

describe('promtool', () => {
  it('check rules: the alert rules are valid', async () => {
    const result = await promtoolRun(['check', 'rules', RULES_FILE]);
    expect(result).toMatchObject({ ok: true });
    if (promtool) expect(result.output).toContain('SUCCESS: 9 rules found');
  });

  it('test rules: every alert fires when, and only when, its tests say', async () => {
    const result = await promtoolRun(['test', 'rules', RULE_TESTS_FILE]);
    expect(result).toMatchObject({ ok: true });
    if (promtool) expect(result.output).toContain('SUCCESS');
  });

  it('check rules fails on a rule that does not parse', async () => {
    const { rules } = copies((text) => text.replace('expr: max by (topic) (bus_dlq_messages) > 0', 'expr: max by (topic) (bus_dlq_messages > 0'));
    const result = await promtoolRun(['check', 'rules', rules]);
    if (promtool) expect(result).toMatchObject({ ok: false, output: expect.stringContaining('parse error') });
  });

  /** [what is broken, the edit]: each makes an alert's tests fail. */
  const BROKEN: Array<[string, (rules: string) => string]> = [
    ['a lag threshold the test data never passes', (t) => t.replace('(bus_consumer_lag)) > 1000', '(bus_consumer_lag)) > 100000')],
    ['a 5xx ratio that counts probes', (t) => t.replace(/, route!~"\/healthz\|\/readyz\|\/metrics"/g, '')],
    ['flapping read over too short a window', (t) => t.replace('changes(readiness_ready[15m]) >= 4', 'changes(readiness_ready[2m]) >= 4')],
  ];
  it.each(BROKEN)('test rules fails on %s', async (_name, edit) => {
    const { tests } = copies(edit);
    const result = await promtoolRun(['test', 'rules', tests]);
    if (promtool) expect(result).toMatchObject({ ok: false, output: expect.stringContaining('FAILED') });
  });
});
