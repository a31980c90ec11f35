import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { SERVICE_NODE_FLAGS } from '@svc/runtime';

/**
 * The image ships the workspace packages the entrypoint needs and nothing
 * else, each named in the Dockerfile: its manifest (for `npm ci`) and its
 * compiled output. A package added to what the entrypoint depends on, and
 * forgotten there, would build an image whose services cannot start; this
 * fails first, naming it.
 */
const ROOT = path.resolve(__dirname, '../../..');
const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
}

const workspaces = new Map<string, { dir: string; manifest: Manifest }>();
for (const group of ['libs', 'services', 'tools']) {
  for (const entry of readdirSync(path.join(ROOT, group))) {
    const dir = `${group}/${entry}`;
    const manifest = JSON.parse(readFileSync(path.join(ROOT, dir, 'package.json'), 'utf8')) as Manifest;
    workspaces.set(manifest.name, { dir, manifest });
  }
}

/** Every workspace package the entrypoint reaches through production dependencies. */
function shipped(from: string, seen = new Set<string>()): Set<string> {
  for (const name of Object.keys(workspaces.get(from)?.manifest.dependencies ?? {})) {
    if (workspaces.has(name) && !seen.has(name)) {
      seen.add(name);
      shipped(name, seen);
    }
  }
  return seen;
}

describe('Dockerfile', () => {
  const packages = [...shipped('@svc/deploy')].map((name) => workspaces.get(name)!.dir).sort();

  it('reaches the packages the services are built from', () => {
    expect(packages).toEqual(expect.arrayContaining(['libs/contracts', 'libs/runtime', 'services/ingest-gateway', 'tools/svcctl']));
  });

  it.each(packages)('copies the manifest and the compiled output of %s', (dir) => {
    expect(dockerfile).toContain(`COPY ${dir}/package.json ${dir}/`);
    const copied = dir.startsWith('services/') ? 'services/*/dist' : `${dir}/dist`;
    expect(dockerfile).toMatch(new RegExp(`cp -r --parents [^\\n]*${copied.replace(/[*/]/g, (c) => `\\${c}`)}`));
  });
});

describe('the V8 flags of a service process', () => {
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1];
  const start = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start;

  it.each(SERVICE_NODE_FLAGS)('%s is on the image entrypoint and `npm start`', (flag) => {
    expect(JSON.parse(entrypoint ?? '[]')).toContain(flag);
    expect(start).toMatch(new RegExp(`\\bnode ([^&]* )?${flag}( |$)`));
  });
});
