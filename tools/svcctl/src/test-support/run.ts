import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect } from '@jest/globals';

const MAIN = path.resolve(__dirname, '../../dist/main.js');

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI as an operator would, against the test database. */
export function svcctl(url: string, args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, DATABASE_URL: url, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The one JSON object a successful command prints. */
export async function ok(url: string, args: readonly string[], env?: Record<string, string>): Promise<Record<string, unknown>> {
  const run = await svcctl(url, args, env);
  expect(run).toMatchObject({ code: 0, stderr: '' });
  expect(run.stdout.trim().split('\n')).toHaveLength(1);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}
