import { execFile } from 'node:child_process';
import { mkdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '@svc/runtime';

/**
 * Kafka and the schema registry as local processes, through the scripts in
 * infra/local (artifacts from Maven Central, cached; Java 17). Each start
 * prints `NAME=value` as its last line once the piece is usable.
 */
const INFRA = path.resolve(__dirname, '../../../infra/local');

export interface LocalProcess {
  /** The value the script printed, e.g. `127.0.0.1:41234` for Kafka. */
  address: string;
  /** The JVM's process id (from the script's pid file), for CPU accounting; absent for containers, or if it cannot be read. */
  pid?: number;
  stop(): Promise<void>;
}

/**
 * Extra environment for the script, e.g. `KAFKA_JVM_OPTS: ''` / `REGISTRY_JVM_OPTS: ''`
 * for the full JIT (the scripts default to C1 only, for quick test start-up).
 */
export type LocalProcessEnv = Record<string, string>;

/** Runs `infra/local/<name>` with `args` (bounded by `timeoutMs`) and resolves with its stdout. */
export function script(name: string, args: string[], timeoutMs: number, env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const options = { timeout: timeoutMs, maxBuffer: 16 << 20, env: { ...process.env, ...env } };
    execFile('bash', [path.join(INFRA, name), ...args], options, (err, stdout, stderr) => {
      if (err) reject(new Error(`${name} ${args[0]} failed: ${err.message}\n${stderr.slice(-2000)}`));
      else resolve(stdout);
    });
  });
}

async function startLocal(name: 'kafka' | 'registry', extraEnv: LocalProcessEnv): Promise<LocalProcess> {
  const workdir = path.join(os.tmpdir(), `svc-test-${name}-${process.pid}`);
  await rm(workdir, { recursive: true, force: true });
  await mkdir(workdir, { recursive: true });
  const port = await freePort();
  // Kafka's controller needs a port of its own; pick one rather than assume port+1 is free.
  const env: Record<string, string> = name === 'kafka' ? { ...extraEnv, KAFKA_CONTROLLER_PORT: String(await freePort()) } : extraEnv;
  // First use fetches artifacts from Maven Central, hence the generous limit.
  const out = await script(`${name}.sh`, ['start', workdir, String(port)], 600_000, env);
  const last = out.trim().split('\n').pop() ?? '';
  const address = last.slice(last.indexOf('=') + 1);
  if (!address) throw new Error(`${name}.sh start printed no address`);
  const pid = Number((await readFile(path.join(workdir, `${name}.pid`), 'utf8').catch(() => '')).trim()) || undefined;
  return {
    address,
    ...(pid === undefined ? {} : { pid }),
    async stop() {
      await script(`${name}.sh`, ['stop', workdir], 60_000);
      await rm(workdir, { recursive: true, force: true });
    },
  };
}

/** A single-node KRaft broker on 127.0.0.1; address is `host:port`. */
export const startLocalKafka = (env: LocalProcessEnv = {}): Promise<LocalProcess> => startLocal('kafka', env);

/** A Confluent-API schema registry on 127.0.0.1; address is its base URL. */
export const startLocalRegistry = (env: LocalProcessEnv = {}): Promise<LocalProcess> => startLocal('registry', env);

/** A PostgreSQL server of its own (infra/local/postgres.sh, Debian's binaries), for tests that stop and start it. */
export interface LocalPostgres {
  /** Superuser URL of its `postgres` database. */
  adminUrl: string;
  /** Stops the server (a fast shutdown); its data stays. */
  stopServer(): Promise<void>;
  /** Starts it again on the same port and data. */
  startServer(): Promise<void>;
  /** Stops it and removes its data. */
  remove(): Promise<void>;
}

export async function startLocalPostgres(certsDir?: string): Promise<LocalPostgres> {
  const workdir = path.join(os.tmpdir(), `svc-test-pg-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
  const port = String(await freePort());
  const args = ['start', workdir, port, ...(certsDir ? [certsDir] : [])];
  const out = await script('postgres.sh', args, 120_000);
  const last = out.trim().split('\n').pop() ?? '';
  const stopServer = async () => {
    await script('postgres.sh', ['stop', workdir], 60_000);
  };
  return {
    adminUrl: last.slice(last.indexOf('=') + 1),
    stopServer,
    startServer: async () => {
      await script('postgres.sh', args, 120_000);
    },
    remove: async () => {
      await stopServer();
      await rm(workdir, { recursive: true, force: true });
    },
  };
}
