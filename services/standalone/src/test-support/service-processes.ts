import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { freePort, SERVICE_NODE_FLAGS } from '@svc/runtime';

/** The services deployed one per process (each one's `dist/main.js`, its composition root). */
export const DEPLOYED_SERVICES = ['ingest-gateway', 'identity-resolver', 'profile-api', 'consent-api', 'conversion-forwarder'] as const;
export type DeployedService = (typeof DEPLOYED_SERVICES)[number];

/**
 * A service's built entry point run as its own process, as a deployment
 * runs it (needs the build: `npm test` builds first), with `env` (the
 * database, the bus) and a free port on 127.0.0.1.
 */
export interface ServiceProcess {
  service: DeployedService;
  /** http://127.0.0.1:<port> */
  origin: string;
  pid: number;
  /** True once the process has exited. */
  exited(): boolean;
  /** Its exit code once it has exited (null: not yet, or ended by a signal). */
  exitCode(): number | null;
  /** The last 64 KB of its output (the logs go to stdout, a failed start to stderr). */
  stderr(): string;
  /** SIGTERM, waits for the exit (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL (a machine dying), waits for the exit. */
  kill(): Promise<void>;
}

const SERVICES_DIR = path.resolve(__dirname, '../../..');
const STDERR_KEEP = 64 * 1024;
/** One raw-log master key for every process a test starts: the gateway seals with the keys the resolver opens. */
const RAW_LOG_MASTER_KEY = randomBytes(32).toString('hex');
/** And one list of identifier hash keys: every service hashes an identifier alike. */
const IDENTIFIER_HASH_KEYS = randomBytes(32).toString('hex');

/** Starts one service; resolves once it answers /healthz. */
export async function startServiceProcess(service: DeployedService, env: Record<string, string>, readyWithinMs = 60_000): Promise<ServiceProcess> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [...SERVICE_NODE_FLAGS, path.join(SERVICES_DIR, service, 'dist/main.js')], {
    env: {
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'error',
      CONNECTOR_SECRET_KEY: randomBytes(32).toString('hex'),
      RAW_LOG_MASTER_KEY,
      IDENTIFIER_HASH_KEYS,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const keep = (b: Buffer) => {
    stderr += b.toString();
    if (stderr.length > 2 * STDERR_KEEP) stderr = stderr.slice(-STDERR_KEEP);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  const origin = `http://127.0.0.1:${port}`;
  const stop = async (graceMs = 20_000) => {
    if (!gone()) child.kill('SIGTERM');
    const timer = setTimeout(() => {
      if (!gone()) child.kill('SIGKILL');
    }, graceMs);
    await exited;
    clearTimeout(timer);
  };
  const kill = async () => {
    if (!gone()) child.kill('SIGKILL');
    await exited;
  };
  if (child.pid === undefined) throw new Error(`${service} did not start`);
  const handle: ServiceProcess = { service, origin, pid: child.pid, exited: gone, exitCode: () => child.exitCode, stderr: () => stderr.slice(-STDERR_KEEP), stop, kill };
  const deadline = Date.now() + readyWithinMs;
  for (;;) {
    if (gone()) throw new Error(`${service} exited (${child.exitCode ?? child.signalCode}) before it served: ${stderr}`);
    const up = await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);
    if (up) return handle;
    if (Date.now() > deadline) {
      await kill();
      throw new Error(`${service} did not answer /healthz within ${readyWithinMs / 1000} s: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Starts every one; if any fails to, kills those that did before rethrowing,
 * so a failed start leaves no process behind to keep the test runner alive.
 */
export async function startServiceProcesses(
  services: ReadonlyArray<{ service: DeployedService; env: Record<string, string> }>,
): Promise<ServiceProcess[]> {
  const started = await Promise.allSettled(services.map((s) => startServiceProcess(s.service, s.env)));
  const running = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (!failed) return running;
  await Promise.all(running.map((s) => s.kill()));
  throw failed.reason;
}

/** Waits until every process answers /readyz with 200 (bounded); returns those that did not. */
export async function waitAllReady(processes: readonly ServiceProcess[], withinMs: number): Promise<string[]> {
  const deadline = Date.now() + withinMs;
  let notReady: string[] = [];
  do {
    notReady = [];
    for (const p of processes) {
      const status = await fetch(`${p.origin}/readyz`, { signal: AbortSignal.timeout(3_000) }).then((r) => r.status, () => 0);
      if (status !== 200) notReady.push(`${p.service} (pid ${p.pid}): ${status || 'no answer'}`);
    }
    if (notReady.length === 0) return [];
    await new Promise((resolve) => setTimeout(resolve, 500));
  } while (Date.now() < deadline);
  return notReady;
}
