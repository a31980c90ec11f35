import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';

/** No package reaches into another's sources. */
const INTERNALS = [{ group: ['@svc/*/src/*', '../../libs/*', '../../services/*'], message: "import the package, not another package's sources" }];
const SERVICES = ['ingest-gateway', 'identity-resolver', 'profile-api', 'consent-api', 'conversion-forwarder', 'standalone'];
const TOOLS = ['svcctl', 'deploy'];
const forbid = (packages, why) => packages.map((name) => ({ group: [`@svc/${name}`], message: why }));
/** Tests may use another service as a fixture (declared as a devDependency); shipped code may not. */
const TESTS = ['**/*.test.ts', '**/*.suite.ts', '**/test-support/**'];

/**
 * The dependency rule (docs/architecture.md): libraries import libraries;
 * a service imports libraries only; the standalone stack composes services;
 * tools sit on top. Shown able to fail by libs/testkit/src/dependency-rule.test.ts.
 */
const dependencyRule = [
  {
    files: ['libs/*/src/**/*.ts'],
    ignores: TESTS,
    rules: { 'no-restricted-imports': ['error', { patterns: [...INTERNALS, ...forbid([...SERVICES, ...TOOLS], 'a library depends on libraries only')] }] },
  },
  ...SERVICES.filter((s) => s !== 'standalone').map((service) => ({
    files: [`services/${service}/src/**/*.ts`],
    ignores: TESTS,
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [...INTERNALS, ...forbid([...SERVICES.filter((s) => s !== service), ...TOOLS], 'a service depends on libraries only: move what both need into libs/')] },
      ],
    },
  })),
  {
    files: ['services/standalone/src/**/*.ts'],
    ignores: TESTS,
    rules: { 'no-restricted-imports': ['error', { patterns: [...INTERNALS, ...forbid(TOOLS, 'the standalone stack composes services, never tools')] }] },
  },
];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/*.js', '**/*.mjs', '**/*.cjs', '.data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      // The browser library's React example is its own project (JSX, a bundler's resolution).
      parserOptions: { project: ['./tsconfig.test.json', './libs/sdk-browser/examples/react/tsconfig.json'], tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
      'no-restricted-imports': ['error', { patterns: INTERNALS }],
    },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'] })],
    },
  },
  ...dependencyRule,
);
