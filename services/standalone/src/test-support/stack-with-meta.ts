/**
 * The stack of test-stack.ts with a stand-in for Meta's Conversions API on
 * 127.0.0.1 beside it, and a bus client of the test's own: how the suites on
 * the real stack see conversions delivered (or refused) without leaving the
 * machine, and read the stack's topics as they are stored.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { busConfigSpec, createBus, type Bus } from '@svc/bus';
import { ConnectorStore, resolveSecretKey } from '@svc/conversions';
import { loadConfig } from '@svc/runtime';
import { testLogger } from '@svc/testkit';
import { startTestStack, type TestStack } from './test-stack';

export interface StackWithMetaOptions {
  /** The stack's bus (KAFKA_BROKERS or none for the Postgres-backed log, TOPIC_PREFIX): the test's bus client is made on it too. */
  busEnv: Record<string, string>;
  /** The stack's other settings, beyond test-stack.ts's. */
  env: Record<string, string>;
  /** What the stand-in answers, asked at each request: Meta's receipt on a 200 (the default), Meta's error body otherwise. */
  metaStatus?: () => number;
}

export interface StackWithMeta extends TestStack {
  /** The test's own client of the stack's bus. */
  bus: Bus;
  /** Gives `orgId` a Meta connector pointed at the stand-in, sealed as the stack seals it (with the key in its DATA_DIR). */
  connectToMeta(orgId: string): Promise<void>;
  /** Closes the bus client, stops the stack (TestStack's stop), then the stand-in. */
  stop(): Promise<void>;
}

/** `name` names the loggers (the stack's, and `${name}-bus` for the test's bus client), the DATA_DIR and the shutdown. */
export async function startStackWithMeta(name: string, { busEnv, env, metaStatus = () => 200 }: StackWithMetaOptions): Promise<StackWithMeta> {
  const meta = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const status = metaStatus();
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(status === 200 ? { events_received: 1, fbtrace_id: 'trace' } : { error: { message: 'unavailable', code: 2 } }));
    });
  });
  await new Promise<void>((resolve) => meta.listen(0, '127.0.0.1', resolve));
  const metaUrl = `http://127.0.0.1:${(meta.address() as AddressInfo).port}`;
  const closeMeta = () => new Promise<void>((resolve) => meta.close(() => resolve()));
  let running: TestStack | undefined;
  try {
    running = await startTestStack(name, testLogger(name), { ...env, ...busEnv });
    const bus = await createBus(loadConfig(busConfigSpec, busEnv), { db: running.t.db, logger: testLogger(`${name}-bus`) });
    const started = running;
    return {
      ...started,
      bus,
      async connectToMeta(orgId) {
        const connectors = new ConnectorStore(started.t.db, await resolveSecretKey(undefined, started.dataDir));
        await connectors.add({ orgId, platform: 'meta', config: { pixel_id: '1234567890', access_token: 'meta-access-token-value', api_base_url: metaUrl } });
      },
      async stop() {
        await bus.close();
        await started.stop();
        await closeMeta();
      },
    };
  } catch (err) {
    await running?.stop();
    await closeMeta();
    throw err;
  }
}
