/**
 * Podman's Docker-compatible API on a private socket, for docker compose.
 *
 * Only on a socket under the caller's own directory: never the well-known
 * paths (/var/run/docker.sock, /run/podman/podman.sock), which the test kit's
 * testcontainers would find and try to pull images through in every other
 * test run on the machine. Nobody else learns of it: DOCKER_HOST goes only
 * into the environment of the commands that need it.
 *
 * Podman runs a container's healthcheck from a systemd timer, and these
 * machines have no systemd, so healthchecks would never run and compose
 * would wait forever for `service_healthy`. While the service runs, this
 * module does the timer's work: every few seconds it asks the API to run the
 * healthcheck of each container that has one (the check itself still runs
 * inside the container, and podman records the result as usual).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { ROOT } from './deployment';

export const CONTAINERS_CONF = path.join(ROOT, 'infra/local/podman/containers.conf');

export interface PodmanService {
  /** The value for DOCKER_HOST, e.g. `unix:///tmp/x/podman.sock`. */
  dockerHost: string;
  stop(): Promise<void>;
}

/** GET on the API; resolves with the body, rejects on a transport error or a non-2xx status. */
function apiGet(socketPath: string, urlPath: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: urlPath, timeout: 30_000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => ((res.statusCode ?? 500) < 300 ? resolve(body) : reject(new Error(`${urlPath}: ${res.statusCode} ${body}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`${urlPath}: timed out`)));
    req.on('error', reject);
  });
}

const WITH_HEALTHCHECK = encodeURIComponent(JSON.stringify({ health: ['starting', 'healthy', 'unhealthy'] }));

/** Runs every container's healthcheck once, one after another (as many checks at once would starve two cores). */
async function runHealthchecks(socketPath: string): Promise<void> {
  const containers = JSON.parse(await apiGet(socketPath, `/v4.0.0/libpod/containers/json?filters=${WITH_HEALTHCHECK}`)) as Array<{ Id: string }>;
  for (const { Id } of containers) {
    // A container stopping meanwhile answers an error: the next round forgets it.
    await apiGet(socketPath, `/v4.0.0/libpod/containers/${Id}/healthcheck`).catch(() => undefined);
  }
}

/** Starts `podman system service` on `<dir>/podman.sock` and waits until it answers. */
export async function startPodmanService(dir: string, healthcheckEveryMs = 3_000): Promise<PodmanService> {
  const socketPath = path.join(dir, 'podman.sock');
  const child: ChildProcess = spawn('podman', ['system', 'service', '--time=0', `unix://${socketPath}`], {
    env: { ...process.env, CONTAINERS_CONF },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 200))) {
    if (child.exitCode !== null) throw new Error(`podman system service exited ${child.exitCode}: ${stderr}`);
    if ((await apiGet(socketPath, '/_ping').catch(() => '')) === 'OK') break;
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error(`podman system service did not answer on ${socketPath}: ${stderr}`);
    }
  }

  let stopping = false;
  let round: Promise<void> = Promise.resolve();
  const tick = (): void => {
    round = runHealthchecks(socketPath).catch(() => undefined);
    void round.then(() => {
      if (!stopping) timer = setTimeout(tick, healthcheckEveryMs);
    });
  };
  let timer = setTimeout(tick, healthcheckEveryMs);

  return {
    dockerHost: `unix://${socketPath}`,
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await round;
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}
