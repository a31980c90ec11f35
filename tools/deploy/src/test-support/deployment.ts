/**
 * Shared set-up of the deployment suites: the tools they run (helm, docker
 * compose, kubernetes-validate, built once by infra/local/deploy-tools.sh)
 * and the programs they need on the machine. A suite whose programs are
 * missing is skipped loudly, unless REQUIRE_INFRA=1 (CI), where it fails.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describeUnlessMissing, infraRequired, isExecutable } from '@svc/testkit';

export const ROOT = path.resolve(__dirname, '../../../..');
const INFRA = path.join(ROOT, 'infra/local');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end; a non-zero exit is a result, not an error. */
export function run(file: string, args: readonly string[], options: { env?: Record<string, string>; timeoutMs?: number; cwd?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { env: { ...process.env, ...options.env }, timeout: options.timeoutMs ?? 120_000, maxBuffer: 64 << 20, cwd: options.cwd ?? ROOT },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') reject(new Error(`${path.basename(file)} ${args.join(' ')}: ${err.message}\n${stderr.slice(-4000)}`));
        else resolve({ code: typeof err?.code === 'number' ? err.code : 0, stdout, stderr });
      },
    );
  });
}

/** Like run, but a non-zero exit throws with the program's output. */
export async function runOk(file: string, args: readonly string[], options: Parameters<typeof run>[2] = {}): Promise<string> {
  const result = await run(file, args, options);
  if (result.code !== 0) throw new Error(`${path.basename(file)} ${args.join(' ')} exited ${result.code}\n${result.stdout.slice(-4000)}\n${result.stderr.slice(-4000)}`);
  return result.stdout;
}

export interface DeployTools {
  helm: string;
  dockerCompose: string;
  kubernetesValidate: string;
}

/** Paths of the tools, building the missing ones first (minutes, once per machine). */
export async function deployTools(): Promise<DeployTools> {
  const out = await runOk('bash', [path.join(INFRA, 'deploy-tools.sh')], { timeoutMs: 20 * 60_000 });
  const paths = Object.fromEntries(out.trim().split('\n').map((line) => line.split('=', 2) as [string, string]));
  return { helm: paths.helm!, dockerCompose: paths['docker-compose']!, kubernetesValidate: paths['kubernetes-validate']! };
}

/** Builds the stand-in images and the product's image (cached by podman; minutes when cold). */
export async function buildImages(svcImage: string): Promise<void> {
  await runOk('bash', [path.join(INFRA, 'images.sh'), 'all'], { env: { SVC_IMAGE: svcImage }, timeoutMs: 30 * 60_000 });
}


const onPath = (program: string): boolean => (process.env.PATH ?? '').split(':').some((dir) => isExecutable(path.join(dir, program)));

/** What the static checks need: Go (helm, compose) and Python (kubernetes-validate). */
export const STATIC_CHECK_PROGRAMS = ['go', 'python3'];
/** What starting the compose stack for real needs, besides root: podman and the image builds' tools. */
export const COMPOSE_PROGRAMS = [...STATIC_CHECK_PROGRAMS, 'podman', 'runc', 'debootstrap', 'npm', 'java', 'mvn'];

/** The programs of `programs` this machine lacks (Go may also be in /usr/local/go/bin), and root when `root`. */
export function missingPrograms(programs: readonly string[], root = false): string[] {
  const missing = programs.filter((p) => !onPath(p) && !(p === 'go' && isExecutable('/usr/local/go/bin/go')));
  if (root && process.getuid?.() !== 0) missing.push('root (rootful podman, debootstrap)');
  return missing;
}

/** `describe` that runs when `missing` is empty, else skips loudly, or fails under REQUIRE_INFRA=1. */
export function describeWhenPresent(name: string, missing: readonly string[], body: () => void): void {
  const reason = `missing ${missing.join(', ')} (.ci/run installs the Debian packages: podman runc debootstrap netavark aardvark-dns iptables)`;
  describeUnlessMissing(name, missing.length === 0 ? undefined : reason, body, infraRequired());
}
