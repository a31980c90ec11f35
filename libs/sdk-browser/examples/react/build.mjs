// Builds the example app into one file with esbuild, the key and the API's address baked in:
//   node build.mjs --out dist/app.js --write-key uk_live_… --api-host https://api.example.com/functions/v1
import { build } from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { out: { type: 'string' }, 'write-key': { type: 'string' }, 'api-host': { type: 'string' } } });
if (!values.out || !values['write-key'] || !values['api-host']) throw new Error('usage: node build.mjs --out <file> --write-key <key> --api-host <url>');

await build({
  absWorkingDir: path.dirname(fileURLToPath(import.meta.url)),
  entryPoints: ['src/main.tsx'],
  bundle: true,
  outfile: path.resolve(values.out),
  format: 'iife',
  target: ['es2020'],
  jsx: 'automatic',
  minify: true,
  sourcemap: true,
  logLevel: 'warning',
  define: {
    SVC_WRITE_KEY: JSON.stringify(values['write-key']),
    SVC_API_HOST: JSON.stringify(values['api-host']),
    'process.env.NODE_ENV': '"production"',
  },
});
