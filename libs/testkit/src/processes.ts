import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** How a finished process ended, and what it printed. */
export interface NodeRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a Node script (a built CLI or service) to its end, as an operator would: the test's environment plus `env`. */
export function runNode(file: string, args: readonly string[], env: Record<string, string> = {}): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Waits until the service at `url` answers /readyz with 200; fails at once if its process has exited. */
export async function waitReady(url: string, child: ChildProcess, deadlineMs = 60_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`the service for ${url} exited with ${child.exitCode} before it was ready`);
    if ((await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} not ready within ${deadlineMs / 1000} s`);
}

/** SIGTERM to every process still running, and wait for each to exit. */
export async function stopAll(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }),
  );
}

/** USER_HZ on Linux: the unit of /proc's CPU times. */
const CLOCK_TICKS = 100;

/**
 * CPU seconds (user + system) used so far by a process and its children (a
 * cluster's workers, PostgreSQL's backends and autovacuum workers), those
 * that have exited included: a child's time moves into its parent's
 * cutime and cstime when it is reaped, so a backend or vacuum worker that
 * ends inside a measurement neither vanishes from it nor makes it negative.
 * 0 where /proc says nothing (not Linux, or the process is gone). For
 * benchmarks.
 */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0;
  let procs: string[];
  try {
    procs = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return 0;
  }
  let ticks = 0;
  for (const p of procs) {
    try {
      const text = readFileSync(`/proc/${p}/stat`, 'utf8');
      // Fields after the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
      const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
      if (Number(p) === pid || Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks / CLOCK_TICKS;
}

/** CPU seconds of the whole machine so far: see machineSeconds. */
export interface MachineSeconds {
  /** Busy: everything but idle and iowait, steal included. */
  busy: number;
  /**
   * Stolen: time a virtual CPU was ready to run but the hypervisor ran
   * someone else. On a shared host this swings from run to run, and every
   * figure measured meanwhile with it; benches report it beside their figures.
   */
  steal: number;
}

/** The machine's CPU seconds so far (/proc/stat's first line); zeros where it cannot be read. */
export function machineSeconds(): MachineSeconds {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = cpu;
    return { busy: (user + nice + system + irq + softirq + steal) / CLOCK_TICKS, steal: steal / CLOCK_TICKS };
  } catch {
    return { busy: 0, steal: 0 };
  }
}

/**
 * Runs `cleanup` (once) when the process is told to stop (SIGINT, SIGTERM,
 * SIGHUP: Ctrl-C, `timeout`, a closed terminal), then exits as that signal
 * would have ended it (128 + its number). For benches: a database they
 * started, and its data directory, must not outlive them. Returns the
 * function that takes the handlers off again (when the bench cleaned up by
 * itself).
 */
export function cleanUpOnSignals(cleanup: () => Promise<void>): () => void {
  const signals = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 } as const;
  let running: Promise<void> | undefined;
  const handlers = Object.entries(signals).map(([signal, number]) => {
    const handler = () => {
      // What is still running fails as its processes and database go away: the bench is stopping, not broken.
      process.on('uncaughtException', () => undefined);
      process.on('unhandledRejection', () => undefined);
      running ??= cleanup()
        .catch((err: unknown) => console.error(`cleaning up after ${signal} failed:`, err))
        .finally(() => process.exit(128 + number));
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
}
