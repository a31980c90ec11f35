import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from '@jest/globals';

/**
 * The package as people install it: what `npm pack` puts in the tarball
 * (the ESM, CommonJS and script-tag builds, their type declarations and
 * source maps, README and LICENSE, and nothing else), each build within its
 * gzipped size budget, each source map complete (the sources inside it: src/
 * is not shipped).
 */
const ROOT = path.resolve(__dirname, '..');
const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { private?: boolean; license: string; exports: Record<string, unknown> };
const budgets = JSON.parse(readFileSync(path.join(ROOT, 'size-budgets.json'), 'utf8')) as Record<string, number>;
const packed = (JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' })) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);

describe('the published package', () => {
  it('is publishable, under the product’s licence', () => {
    expect(manifest.private).toBeUndefined();
    expect(manifest.license).toBe('Apache-2.0');
    expect(readFileSync(path.join(ROOT, 'LICENSE'), 'utf8')).toBe(readFileSync(path.join(ROOT, '../../LICENSE'), 'utf8'));
  });

  it('holds the three builds, their declarations and maps, README and LICENSE, and nothing else', () => {
    const declarations = packed.filter((f) => f.endsWith('.d.ts'));
    const rest = packed.filter((f) => !f.endsWith('.d.ts')).sort();
    expect(rest).toEqual(
      [
        'LICENSE',
        'README.md',
        'package.json',
        'dist/cjs/index.js',
        'dist/cjs/index.js.map',
        'dist/cjs/package.json',
        'dist/esm/index.js',
        'dist/esm/index.js.map',
        'dist/esm/package.json',
        'dist/svc.min.js',
        'dist/svc.min.js.map',
      ].sort(),
    );
    // Every build has its declarations: the modules' entry and each file it names, the script tag's global.
    for (const dir of ['dist/esm', 'dist/cjs']) expect(declarations).toContain(`${dir}/index.d.ts`);
    expect(declarations).toContain('dist/svc.min.d.ts');
    expect(new Set(declarations.filter((f) => f.startsWith('dist/esm/')).map((f) => path.basename(f)))).toEqual(
      new Set(declarations.filter((f) => f.startsWith('dist/cjs/')).map((f) => path.basename(f))),
    );
    expect(packed.every((f) => !f.startsWith('src/') && !f.includes('tsbuildinfo') && !f.startsWith('dist/types/'))).toBe(true);
  });

  it.each(Object.entries(budgets))('dist/%s is within its gzipped size budget (%d bytes)', (file, budget) => {
    expect(packed).toContain(`dist/${file}`);
    expect(gzipSync(readFileSync(path.join(ROOT, 'dist', file)), { level: 9 }).length).toBeLessThanOrEqual(budget);
  });

  it.each(['esm/index.js', 'cjs/index.js', 'svc.min.js'])('dist/%s names its source map, which carries the sources', (file) => {
    const code = readFileSync(path.join(ROOT, 'dist', file), 'utf8');
    expect(code.trimEnd().split('\n').pop()).toBe(`//# sourceMappingURL=${path.basename(file)}.map`);
    const map = JSON.parse(readFileSync(path.join(ROOT, 'dist', `${file}.map`), 'utf8')) as { sources: string[]; sourcesContent: string[] };
    expect(map.sources.length).toBeGreaterThan(5);
    expect(map.sources.every((s) => /(^|\/)src\/[\w-]+\.ts$/.test(s))).toBe(true);
    expect(map.sourcesContent).toHaveLength(map.sources.length);
    expect(map.sourcesContent.every((s) => s.length > 0)).toBe(true);
  });

  it('exports each build with its types', () => {
    expect(manifest.exports).toMatchObject({
      '.': { import: { types: './dist/esm/index.d.ts', default: './dist/esm/index.js' }, require: { types: './dist/cjs/index.d.ts', default: './dist/cjs/index.js' } },
      './svc.min.js': { types: './dist/svc.min.d.ts', default: './dist/svc.min.js' },
    });
  });
});
