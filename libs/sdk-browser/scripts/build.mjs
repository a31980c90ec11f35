// Builds the package: type declarations (tsc), ESM and CommonJS bundles (esbuild),
// and the script-tag build (IIFE installing window.svc: esbuild bundles, terser minifies),
// each with its source map, each held to its size budget (size-budgets.json, gzipped);
// and puts the repository's LICENSE beside package.json, for the published package.
//   node scripts/build.mjs               full build into dist/
//   node scripts/build.mjs --iife FILE   only the script-tag build, into FILE (tests)
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { minify } from 'terser';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const require = createRequire(import.meta.url);
/** Gzipped bytes each build may weigh: a change that makes one heavier fails the build, and says by how much. */
const budgets = JSON.parse(readFileSync(path.join(root, 'size-budgets.json'), 'utf8'));

const common = {
  absWorkingDir: root,
  bundle: true,
  platform: 'browser',
  metafile: true,
  logLevel: 'warning',
  legalComments: 'none',
};

/** Nothing but the package's own sources may end up in a bundle (no runtime dependencies). */
function onlyOwnSources(result, what) {
  const foreign = Object.keys(result.metafile.inputs).filter((input) => !input.startsWith('src/'));
  if (foreign.length) throw new Error(`${what} pulls in code from outside src/: ${foreign.join(', ')}`);
}

async function buildIife(outfile) {
  mkdirSync(path.dirname(outfile), { recursive: true });
  const result = await build({ ...common, entryPoints: ['src/iife.ts'], write: false, outfile, format: 'iife', target: ['es2020'], sourcemap: 'external', sourcesContent: true });
  onlyOwnSources(result, 'the script-tag build');
  const js = result.outputFiles.find((f) => f.path.endsWith('.js'));
  const map = result.outputFiles.find((f) => f.path.endsWith('.js.map'));
  // terser's map continues esbuild's: the minified file maps back to src/.
  const mapName = `${path.basename(outfile)}.map`;
  const min = await minify(js.text, {
    ecma: 2020,
    compress: { passes: 2 },
    mangle: true,
    format: { comments: false },
    sourceMap: { content: map.text, url: mapName, includeSources: true },
  });
  const tmp = `${outfile}.${process.pid}.tmp`;
  writeFileSync(`${outfile}.map`, min.map);
  writeFileSync(tmp, min.code);
  renameSync(tmp, outfile); // atomic: concurrent test workers never read a half-written file
  return outfile;
}

/** The gzipped size of `file`, checked against its budget. */
function withinBudget(file) {
  const name = path.relative(dist, file);
  const budget = budgets[name];
  if (budget === undefined) throw new Error(`size-budgets.json has no budget for dist/${name}`);
  const bytes = readFileSync(file);
  const gzipped = gzipSync(bytes, { level: 9 }).length;
  if (gzipped > budget) throw new Error(`dist/${name} is ${gzipped} bytes gzipped, over its budget of ${budget} by ${gzipped - budget}`);
  console.log(`@svc/sdk-browser: dist/${name} ${bytes.length} bytes, ${gzipped} gzipped (budget ${budget})`);
}

async function buildAll() {
  rmSync(dist, { recursive: true, force: true });
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.json')], { stdio: 'inherit' });
  for (const file of ['iife.d.ts']) rmSync(path.join(dist, 'types', file), { force: true });
  for (const d of readdirSync(path.join(dist, 'types'))) {
    if (readFileSync(path.join(dist, 'types', d), 'utf8').includes('@svc/contracts')) throw new Error(`dist/types/${d} refers to @svc/contracts`);
  }
  for (const [format, dir] of [['esm', 'esm'], ['cjs', 'cjs']]) {
    const result = await build({ ...common, entryPoints: ['src/index.ts'], outfile: `dist/${dir}/index.js`, format, target: ['es2020'], sourcemap: true, sourcesContent: true });
    onlyOwnSources(result, `the ${format} build`);
    writeFileSync(path.join(dist, dir, 'package.json'), JSON.stringify({ type: format === 'esm' ? 'module' : 'commonjs', sideEffects: false }) + '\n');
  }
  // ESM declarations: the same files with explicit .js specifiers (what node16/bundler resolution of ESM expects)
  for (const d of readdirSync(path.join(dist, 'types'))) {
    const text = readFileSync(path.join(dist, 'types', d), 'utf8').replace(/(from '\.\/[\w-]+)(')/g, '$1.js$2');
    writeFileSync(path.join(dist, 'esm', d), text);
  }
  cpSync(path.join(dist, 'types'), path.join(dist, 'cjs'), { recursive: true });
  const iife = await buildIife(path.join(dist, 'svc.min.js'));
  // The script-tag build's types: the client it installs as the global `svc`.
  writeFileSync(
    path.join(dist, 'svc.min.d.ts'),
    "// Types of the script-tag build (svc.min.js): it installs the client as the global `svc`.\nimport type { SvcClient } from './esm/index.js';\n\ndeclare global {\n  var svc: SvcClient;\n}\n\nexport {};\n",
  );
  for (const file of [path.join(dist, 'esm/index.js'), path.join(dist, 'cjs/index.js'), iife]) withinBudget(file);
  cpSync(path.join(root, '../../LICENSE'), path.join(root, 'LICENSE'));
}

const at = process.argv.indexOf('--iife');
if (at > 0) {
  const out = process.argv[at + 1];
  if (!out) throw new Error('--iife needs an output file');
  await buildIife(path.resolve(out));
} else {
  await buildAll();
}
