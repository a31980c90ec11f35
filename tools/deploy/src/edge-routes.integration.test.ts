/**
 * One routing table for every edge: each path of the OpenAPI document (and a
 * few that are not in it) routed through the compose Caddyfile and through the
 * Helm chart's rendered Ingress must reach the service that libs/openapi's
 * ROUTES names. A route added to the document without its edges fails here;
 * the compose and cluster tests then send real requests through both.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { buildOpenApiDocument, documentedApiRequests, prefixMatches, serviceForPath } from '@svc/openapi';
import { parseAllDocuments } from 'yaml';
import { ROOT, STATIC_CHECK_PROGRAMS, deployTools, describeWhenPresent, missingPrograms, runOk } from './test-support/deployment';

/** The documented paths, and a few more: an unknown route, a name that only starts like a prefix, the bare base URL. */
const PATHS = [
  ...new Set([
    ...documentedApiRequests(buildOpenApiDocument()).map((r) => r.path),
    '/functions/v1/no-such-route',
    '/functions/v1/v1-profilesx',
    '/functions/v1/v1-consent/x',
    '/functions/v1',
  ]),
];

it('the paths routed include every Segment-compatible route and the document itself', () => {
  expect(PATHS).toEqual(expect.arrayContaining(['/functions/v1/segment/v1/batch', '/functions/v1/segment/v1/page', '/functions/v1/openapi.json']));
});

describe('the compose edge (infra/edge/Caddyfile)', () => {
  /** Caddy's `handle` blocks, in order: the paths each matches and the service it proxies to. */
  function caddyRoutes(caddyfile: string): { paths: string[]; service: string }[] {
    const matchers = new Map([...caddyfile.matchAll(/^\s*@(\w+) path (.+)$/gm)].map((m) => [m[1]!, m[2]!.trim().split(/\s+/)]));
    return [...caddyfile.matchAll(/^\s*handle @(\w+) \{[\s\S]*?dynamic a ([\w-]+) 8080/gm)].map((m) => ({ paths: matchers.get(m[1]!) ?? [], service: m[2]! }));
  }
  /** Caddy's path matcher: exact, or a trailing `*` as a prefix. */
  const caddyMatches = (pattern: string, p: string) => (pattern.endsWith('*') ? p.startsWith(pattern.slice(0, -1)) : p === pattern);
  const routes = caddyRoutes(readFileSync(path.join(ROOT, 'infra/edge/Caddyfile'), 'utf8'));

  it('has the three public services in its handle blocks', () => {
    expect(routes.map((r) => r.service).sort()).toEqual(['consent-api', 'ingest-gateway', 'profile-api']);
  });

  it.each(PATHS)('%s reaches the service of the routing table', (p) => {
    const first = routes.find((r) => r.paths.some((pattern) => caddyMatches(pattern, p)));
    expect(first?.service).toBe(serviceForPath(p));
  });
});

describeWhenPresent('the Helm chart\'s Ingress', missingPrograms(STATIC_CHECK_PROGRAMS), () => {
  let rules: { path: string; pathType: string; service: string }[];
  beforeAll(async () => {
    const tools = await deployTools();
    const rendered = await runOk(tools.helm, ['template', 'svc', path.join(ROOT, 'infra/helm/svc'), '--kube-version', '1.29.0', '--show-only', 'templates/ingress.yaml']);
    const ingress = parseAllDocuments(rendered).map((d) => d.toJS() as IngressManifest).find((m) => m?.kind === 'Ingress');
    rules = (ingress?.spec.rules ?? []).flatMap((rule) =>
      rule.http.paths.map((p) => ({ path: p.path, pathType: p.pathType, service: p.backend.service.name.replace(/^svc-/, '') })),
    );
  }, 20 * 60_000);

  it('routes by Prefix only, to the three public services', () => {
    expect(rules.map((r) => r.pathType)).toEqual(rules.map(() => 'Prefix'));
    expect(rules.map((r) => r.service).sort()).toEqual(['consent-api', 'ingest-gateway', 'profile-api']);
  });

  it.each(PATHS)('%s reaches the service of the routing table (the longest Prefix wins)', (p) => {
    const matching = rules.filter((r) => prefixMatches(r.path, p)).sort((a, b) => b.path.length - a.path.length);
    expect(matching[0]?.service).toBe(serviceForPath(p));
  });
});

interface IngressManifest {
  kind: string;
  spec: { rules: { http: { paths: { path: string; pathType: string; backend: { service: { name: string } } }[] } }[] };
}
