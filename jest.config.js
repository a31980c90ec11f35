// One jest run for the whole repo: unit tests need nothing; *.integration.test.ts
// use the real PostgreSQL / Kafka / schema registry that the global setup provides
// (from the environment, or started locally once per run; see libs/testkit).
const swc = [
  '@swc/jest',
  {
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  },
];

/** Workspace packages resolve to their TypeScript sources, so tests never need a build. */
const moduleNameMapper = {
  '^@svc/(contracts|runtime|accounts|testkit|bus|identity|conversions|service|sdk-browser|openapi)$': '<rootDir>/libs/$1/src/index.ts',
  '^@svc/(ingest-gateway|identity-resolver|consent-api|profile-api|conversion-forwarder)$': '<rootDir>/services/$1/src/index.ts',
};

const project = (dir, displayName) => ({
  displayName,
  rootDir: __dirname,
  roots: [`<rootDir>/${dir}`],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  transform: { '^.+\\.ts$': swc },
  moduleNameMapper,
  testEnvironment: 'node',
});

module.exports = {
  projects: [
    project('libs/contracts', '@svc/contracts'),
    project('libs/runtime', '@svc/runtime'),
    project('libs/accounts', '@svc/accounts'),
    project('libs/testkit', '@svc/testkit'),
    project('libs/bus', '@svc/bus'),
    project('libs/identity', '@svc/identity'),
    project('libs/conversions', '@svc/conversions'),
    project('libs/service', '@svc/service'),
    project('libs/sdk-browser', '@svc/sdk-browser'),
    project('libs/openapi', '@svc/openapi'),
    project('tools/svcctl', '@svc/svcctl'),
    project('tools/deploy', '@svc/deploy'),
    project('services/standalone', '@svc/standalone'),
    project('services/ingest-gateway', '@svc/ingest-gateway'),
    project('services/consent-api', '@svc/consent-api'),
    project('services/identity-resolver', '@svc/identity-resolver'),
    project('services/profile-api', '@svc/profile-api'),
    project('services/conversion-forwarder', '@svc/conversion-forwarder'),
  ],
  globalSetup: '<rootDir>/libs/testkit/src/global-setup.ts',
  globalTeardown: '<rootDir>/libs/testkit/src/global-teardown.ts',
  transform: { '^.+\\.ts$': swc },
  moduleNameMapper,
  testTimeout: 60_000,
};
