import { createLogger, httpServiceConfigSpec, loadConfig, type Logger } from '@svc/runtime';

const spec = { TEST_LOG_LEVEL: { ...httpServiceConfigSpec.LOG_LEVEL, description: 'Log level of the services under test', default: 'silent' as const } };

/** Read once, when the test file loads testkit. */
const { TEST_LOG_LEVEL } = loadConfig(spec, process.env);

/** A logger for services under test: silent unless TEST_LOG_LEVEL asks otherwise (e.g. `TEST_LOG_LEVEL=debug npx jest …`). */
export function testLogger(name: string): Logger {
  return createLogger({ name, level: TEST_LOG_LEVEL });
}
