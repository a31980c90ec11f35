/**
 * The whole product in the test's process, listening on 127.0.0.1, on a
 * database and a DATA_DIR of its own: what the suites that drive the real
 * stack over HTTP start from. Each suite adds the settings it is about
 * (its bus tier's, its intervals) in `env`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, loadConfig, type Logger } from '@svc/runtime';
import { createTestDatabase, type TestDatabase } from '@svc/testkit';
import { standaloneConfigSpec } from '../config';
import { startStack, type RunningStack } from '../stack';

export interface TestStack {
  t: TestDatabase;
  /** The stack's DATA_DIR: the keys it makes for itself are kept there. */
  dataDir: string;
  port: number;
  stack: RunningStack;
  /** Shuts the stack down, drops its database and removes its DATA_DIR. */
  stop(): Promise<void>;
}

/** `name` names the DATA_DIR and the shutdown; a set-up that fails leaves nothing behind. */
export async function startTestStack(name: string, logger: Logger, env: Record<string, string> = {}): Promise<TestStack> {
  const t = await createTestDatabase();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `svc-${name}-`));
  const removeStorage = async () => {
    await t.drop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const port = await freePort();
    const config = loadConfig(standaloneConfigSpec, { HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: t.url, DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env });
    const stack = await startStack(config, logger);
    const stop = async () => {
      await stack.lifecycle.shutdown(`${name} done`);
      await removeStorage();
    };
    return { t, dataDir, port, stack, stop };
  } catch (err) {
    await removeStorage();
    throw err;
  }
}
