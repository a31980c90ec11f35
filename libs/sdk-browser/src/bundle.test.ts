/**
 * The script-tag build: built fresh from the sources, it must stay within the
 * size budget, carry no dependency code, and install window.svc (replaying the
 * loader snippet's queued calls).
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { gzipSync } from 'node:zlib';
import { buildScriptTag } from './test-support/script-tag';
import { VERSION } from './version';

const root = path.resolve(__dirname, '..');
/** The script-tag build's budget, as the build holds it (size-budgets.json). */
const BUDGET_GZIP_BYTES = (JSON.parse(readFileSync(path.join(root, 'size-budgets.json'), 'utf8')) as Record<string, number>)['svc.min.js']!;

describe('script-tag build', () => {
  const code = buildScriptTag();

  it(`is at most ${BUDGET_GZIP_BYTES} bytes minified and gzipped`, () => {
    const gzipped = gzipSync(code, { level: 9 }).length;
    console.log(`svc.min.js: ${code.length} bytes minified, ${gzipped} bytes gzipped (budget ${BUDGET_GZIP_BYTES})`);
    expect(gzipped).toBeLessThanOrEqual(BUDGET_GZIP_BYTES);
  });

  it('contains no dependency code and no unload listener', () => {
    const text = code.toString('utf8');
    expect(text).not.toMatch(/\brequire\(|typebox|ajv/i);
    expect(text).not.toMatch(/["'](unload|beforeunload)["']/);
    expect(text).toContain(VERSION);
  });

  it('installs window.svc and replays calls queued by the loader snippet', () => {
    const stub = { _q: [['setDebug', [false]], ['use', [{ name: 'queued-plugin' }]]] };
    const sandbox: Record<string, unknown> = { svc: stub, console };
    vm.runInNewContext(code.toString('utf8'), sandbox);
    const svc = sandbox.svc as { VERSION: string; init: unknown; track: unknown; consent: { grant: unknown } };
    expect(svc).not.toBe(stub);
    expect(svc.VERSION).toBe(VERSION);
    expect(typeof svc.init).toBe('function');
    expect(typeof svc.consent.grant).toBe('function');
    expect(() => (svc.track as (e: string) => void)('x')).toThrow('call init() first');
  });
});

describe('package', () => {
  it('has the version the library reports, no runtime dependencies and no side effects', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(pkg.version).toBe(VERSION);
    expect(pkg.dependencies).toBeUndefined();
    expect(pkg.sideEffects).toBe(false);
  });
});
