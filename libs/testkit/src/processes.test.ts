import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';

const dir = mkdtempSync(path.join(tmpdir(), 'cleanup-on-signals-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A process that registers a cleanup (it writes `marker`), says it is ready, and would run for a minute. */
function benchLike(marker: string) {
  const script = `
    const { cleanUpOnSignals } = require(${JSON.stringify(path.resolve(__dirname, '../dist/processes.js'))});
    cleanUpOnSignals(async () => {
      await new Promise((r) => setTimeout(r, 50));
      require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'cleaned');
    });
    // What a bench is doing meanwhile fails as its world goes away: that must not cut the cleanup short.
    for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.once(s, () => setTimeout(() => Promise.reject(new Error('the database went away')), 10));
    console.log('ready');
    setTimeout(() => {}, 60_000);`;
  return spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
}

describe('cleanUpOnSignals', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
    ['SIGHUP', 129],
  ] as const)('on %s: cleans up once, then exits %d', async (signal, code) => {
    const marker = path.join(dir, signal);
    const child = benchLike(marker);
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.kill(signal);
    child.kill(signal);
    const exit = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(exit).toBe(code);
    expect(existsSync(marker)).toBe(true);
  });
});
