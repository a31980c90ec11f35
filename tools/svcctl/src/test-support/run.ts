import path from 'node:path';
import { expect } from '@jest/globals';
import { runNode, type NodeRun } from '@svc/testkit';

const MAIN = path.resolve(__dirname, '../../dist/main.js');

/** Runs the built CLI as an operator would, against the test database. */
export function svcctl(url: string, args: readonly string[], env: Record<string, string> = {}): Promise<NodeRun> {
  return runNode(MAIN, args, { DATABASE_URL: url, ...env });
}

/** The one JSON object a successful command prints. */
export async function ok(url: string, args: readonly string[], env?: Record<string, string>): Promise<Record<string, unknown>> {
  const run = await svcctl(url, args, env);
  expect(run).toMatchObject({ code: 0, stderr: '' });
  expect(run.stdout.trim().split('\n')).toHaveLength(1);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}
