import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';

/**
 * The dependency rule of docs/architecture.md, as eslint.config.mjs enforces
 * it: shown able to fail. Each case lints one import as if it were written in
 * the given file (nothing is written; only that rule runs). ESLint runs in a
 * child process: its config is an ES module, which jest's module system
 * cannot load.
 */
const ROOT = path.resolve(__dirname, '../../..');

const REFUSED: Array<[string, string, string, RegExp]> = [
  ['a service importing another service', 'services/profile-api/src/store.ts', '@svc/identity-resolver', /a service depends on libraries only/],
  ['a service importing a tool', 'services/ingest-gateway/src/routes.ts', '@svc/svcctl', /a service depends on libraries only/],
  ['a library importing a service', 'libs/identity/src/merge.ts', '@svc/profile-api', /a library depends on libraries only/],
  ['the standalone stack importing a tool', 'services/standalone/src/stack.ts', '@svc/svcctl', /never tools/],
  ["any package importing another's sources", 'services/consent-api/src/store.ts', '@svc/identity/src/profiles', /not another package's sources/],
];
const ALLOWED: Array<[string, string, string]> = [
  ['a service importing libraries', 'services/profile-api/src/store.ts', '@svc/identity'],
  ['the standalone stack composing services', 'services/standalone/src/stack.ts', '@svc/identity-resolver'],
  ['a tool importing a service', 'tools/svcctl/src/main.ts', '@svc/conversion-forwarder'],
  ['a test using another service as a fixture', 'services/profile-api/src/merge.integration.test.ts', '@svc/identity-resolver'],
];

const SCRIPT = `
  const { ESLint } = await import('eslint');
  // Only this rule runs, and it needs no type information: no TypeScript program is built.
  const eslint = new ESLint({
    cwd: process.cwd(),
    ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports',
    overrideConfig: { languageOptions: { parserOptions: { project: null, projectService: false } } },
  });
  const out = [];
  for (const [file, from] of JSON.parse(process.argv[1])) {
    const [result] = await eslint.lintText("import { x } from '" + from + "';\\nexport const y = x;\\n", { filePath: file });
    // A file that cannot be linted at all says so (its message has no rule), instead of passing for clean.
    out.push(result.messages.map((m) => (m.ruleId ? m.message : 'fatal: ' + m.message)));
  }
  process.stdout.write(JSON.stringify(out));
`;

describe('the dependency rule', () => {
  let messages: string[][];
  beforeAll(() => {
    const cases = [...REFUSED, ...ALLOWED].map(([, file, from]) => [path.join(ROOT, file), from]);
    messages = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', SCRIPT, JSON.stringify(cases)], { cwd: ROOT, encoding: 'utf8' })) as string[][];
  }, 60_000);

  it.each(REFUSED.map((c, i) => [...c, i] as const))('refuses %s', (_name, _file, _from, message, i) => {
    expect(messages[i]).toEqual([expect.stringMatching(message)]);
  });

  it.each(ALLOWED.map((c, i) => [...c, REFUSED.length + i] as const))('allows %s', (_name, _file, _from, i) => {
    expect(messages[i]).toEqual([]);
  });
});
