import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { buildOpenApiDocument } from '@svc/openapi';

/**
 * What a release says about itself: the licence (Apache-2.0) everywhere an
 * adopter or a tool looks for it, and one product version, carried by every
 * workspace package and the image, with its section in CHANGELOG.md.
 */
const ROOT = path.resolve(__dirname, '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

interface Manifest {
  name: string;
  version: string;
  license?: string;
}
const root = JSON.parse(read('package.json')) as Manifest;
const workspaces = ['libs', 'services', 'tools'].flatMap((group) =>
  readdirSync(path.join(ROOT, group)).map((entry) => JSON.parse(read(`${group}/${entry}/package.json`)) as Manifest),
);
/** Versioned on its own: the browser library is published for people to install. */
const OWN_VERSION = new Set(['@svc/sdk-browser']);

describe('the licence', () => {
  it('LICENSE is the Apache License 2.0', () => {
    const text = read('LICENSE');
    expect(text).toMatch(/^\s+Apache License\s+Version 2\.0, January 2004/);
    expect(text).toContain('END OF TERMS AND CONDITIONS');
  });

  it.each([root, ...workspaces].map((m) => [m.name, m] as [string, Manifest]))('%s says Apache-2.0', (_, manifest) => {
    expect(manifest.license).toBe('Apache-2.0');
  });

  it('the OpenAPI document names it, generated and committed', () => {
    const license = { name: 'Apache-2.0', identifier: 'Apache-2.0' };
    expect((buildOpenApiDocument() as { info: { license: unknown } }).info.license).toEqual(license);
    expect((JSON.parse(read('libs/openapi/openapi.json')) as { info: { license: unknown } }).info.license).toEqual(license);
  });

  it('the image labels it, and the build adds the version, commit and source', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile).toContain('org.opencontainers.image.licenses="Apache-2.0"');
    for (const label of ['version', 'revision', 'source']) expect(read('infra/local/images.sh')).toContain(`--label org.opencontainers.image.${label}=`);
    expect(dockerfile).toMatch(/^COPY LICENSE \.\/$/m);
  });
});

describe('the version', () => {
  it('is 0.x', () => {
    expect(root.version).toMatch(/^0\.\d+\.\d+$/);
  });

  it.each(workspaces.filter((m) => !OWN_VERSION.has(m.name)).map((m) => [m.name, m] as [string, Manifest]))('%s carries the product version', (_, manifest) => {
    expect(manifest.version).toBe(root.version);
  });

  it('has its release notes in CHANGELOG.md, below the unreleased ones', () => {
    const headings = read('CHANGELOG.md').split('\n').filter((line) => line.startsWith('## '));
    expect(headings[0]).toBe('## Unreleased');
    expect(headings).toContainEqual(expect.stringMatching(new RegExp(`^## ${root.version.replace(/\./g, '\\.')} \\(\\d{4}-\\d{2}-\\d{2}\\)$`)));
  });
});
