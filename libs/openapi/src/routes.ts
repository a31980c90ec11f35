import { BASE_PATH } from './document';

/** The services that answer requests from outside: every other one reads only Kafka and PostgreSQL. */
export type PublicService = 'ingest-gateway' | 'profile-api' | 'consent-api';

/**
 * Which service answers each route under the base URL: the routing table of
 * every edge (the compose Caddyfile, the Helm chart's Ingress). Both are held
 * equal to it by tests that route every path of the OpenAPI document through
 * them (tools/deploy's static checks), so a new route cannot be forgotten at
 * one edge. A prefix matches itself and what lies below it, path element by
 * path element; the longest match wins.
 */
export const ROUTES: readonly { prefix: string; service: PublicService }[] = [
  { prefix: `${BASE_PATH}/v1-profiles`, service: 'profile-api' },
  { prefix: `${BASE_PATH}/v1-consent`, service: 'consent-api' },
  // The batch route, the Segment-compatible routes, the OpenAPI document and
  // any unknown route (the gateway answers it with the API's JSON 404).
  { prefix: BASE_PATH, service: 'ingest-gateway' },
];

/** True when `prefix` matches `path` element by element (Kubernetes' pathType Prefix). */
export function prefixMatches(prefix: string, path: string): boolean {
  return path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`);
}

/** The service that answers `path` (a full path, base path included), or undefined outside the API. */
export function serviceForPath(path: string): PublicService | undefined {
  const matches = ROUTES.filter((r) => prefixMatches(r.prefix, path));
  matches.sort((a, b) => b.prefix.length - a.prefix.length);
  return matches[0]?.service;
}

/**
 * Every operation of the document served under the base URL (operations with
 * servers of their own, /healthz and /readyz, are each service's and never
 * routed), as a concrete request: path parameters filled with a placeholder.
 */
export function documentedApiRequests(document: unknown): { method: string; path: string; documented: string }[] {
  const paths = (document as { paths: Record<string, Record<string, unknown> & { servers?: unknown }> }).paths;
  const requests: { method: string; path: string; documented: string }[] = [];
  for (const [documented, item] of Object.entries(paths)) {
    if (item.servers) continue;
    for (const method of Object.keys(item).filter((key) => HTTP_METHODS.has(key))) {
      requests.push({ method: method.toUpperCase(), path: `${BASE_PATH}${documented.replace(/\{[^}]+\}/g, 'placeholder')}`, documented });
    }
  }
  return requests;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
