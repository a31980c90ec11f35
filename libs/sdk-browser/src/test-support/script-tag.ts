import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The script-tag (IIFE) build, made by the package's own build script, as
 * the CDN would serve it. It is written to a temporary directory that is
 * removed again: test runs leave nothing behind.
 */
export function buildScriptTag(): Buffer {
  const root = path.resolve(__dirname, '../..');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-iife-'));
  try {
    const out = path.join(dir, 'svc.min.js');
    execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs'), '--iife', out], { cwd: root, stdio: 'pipe' });
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
