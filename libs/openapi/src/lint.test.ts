import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from '@jest/globals';

/**
 * `redocly lint` (@redocly/cli, pinned in the root package.json) over the
 * committed document with the repository's rules (redocly.yaml, all
 * recommended rules as errors, and the listed exceptions). It runs on a copy
 * laid out as in the repository, so the same file can be broken on purpose
 * to show that the lint fails.
 */
const ROOT = path.resolve(__dirname, '../../..');
const REDOCLY = path.join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');
const work = mkdtempSync(path.join(os.tmpdir(), 'svc-openapi-lint-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function lint(document: unknown): Promise<{ ok: boolean; output: string }> {
  const dir = mkdtempSync(path.join(work, 'case-'));
  for (const file of ['redocly.yaml', '.redocly.lint-ignore.yaml']) copyFileSync(path.join(ROOT, file), path.join(dir, file));
  mkdirSync(path.join(dir, 'libs/openapi'), { recursive: true });
  writeFileSync(path.join(dir, 'libs/openapi/openapi.json'), JSON.stringify(document, null, 2));
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [REDOCLY, 'lint', '--format=stylish'], { cwd: dir, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } });
    return { ok: true, output: stdout + stderr };
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    return { ok: false, output: stdout + stderr };
  }
}

const committed = JSON.parse(readFileSync(path.join(ROOT, 'libs/openapi/openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, { description?: string }> }>>;
};

describe('redocly lint', () => {
  it('passes the committed document', async () => {
    const result = await lint(committed);
    expect(result.output).not.toMatch(/error/i);
    expect(result.ok).toBe(true);
  }, 60_000);

  /** [broken how, the change, the rule that must name it]. */
  const BROKEN: Array<[string, (doc: typeof committed) => void, string]> = [
    ['two operations share an operationId', (doc) => void (doc.paths['/v1-consent']!.get!.operationId = 'ingestBatch'), 'operation-operationId-unique'],
    ['a response without a description', (doc) => void delete doc.paths['/v1-batch']!.post!.responses!['200']!.description, 'struct'],
  ];
  it.each(BROKEN)('fails a document where %s', async (_name, breakIt, rule) => {
    const doc = structuredClone(committed);
    breakIt(doc);
    const result = await lint(doc);
    expect(result.ok).toBe(false);
    expect(result.output).toContain(rule);
  }, 60_000);
});
