import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { freePort, SERVICE_NODE_FLAGS } from '@svc/runtime';

/** The services deployed one per process (each one's `dist/main.js`, its composition root). */
export const DEPLOYED_SERVICES = ['ingest-gateway', 'identity-resolver', 'profile-api', 'consent-api', 'conversion-forwarder'] as const;
export type DeployedService = (typeof DEPLOYED_SERVICES)[number];

export interface ServiceProcess {
  service: DeployedService;
  /** http://127.0.0.1:<port> */
  origin: string;
  stop(): Promise<void>;
}

const SERVICES_DIR = path.resolve(__dirname, '../../..');

/**
 * Starts one service's built entry point as its own process, as a deployment
 * runs it, with `env` (the database, the bus) and a free port on 127.0.0.1;
 * resolves once it answers /healthz. Needs the build (`npm test` builds first).
 */
export async function startServiceProcess(service: DeployedService, env: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [...SERVICE_NODE_FLAGS, path.join(SERVICES_DIR, service, 'dist/main.js')], {
    env: {
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'error',
      CONNECTOR_SECRET_KEY: randomBytes(32).toString('hex'),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const origin = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${service} exited (${child.exitCode}) before it served: ${stderr}`);
    const up = await fetch(`${origin}/healthz`).then((r) => r.ok, () => false);
    if (up) return { service, origin, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${service} did not answer /healthz within 60 s: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Starts every one of `services`; if any fails to, stops those that did
 * before rethrowing, so a failed start leaves no process behind to keep the
 * test runner alive.
 */
export async function startServiceProcesses(services: readonly DeployedService[], env: Record<string, string>): Promise<ServiceProcess[]> {
  const started = await Promise.allSettled(services.map((service) => startServiceProcess(service, env)));
  const running = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (!failed) return running;
  await Promise.all(running.map((s) => s.stop()));
  throw failed.reason;
}
