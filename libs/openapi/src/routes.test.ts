import { describe, expect, it } from '@jest/globals';
import { buildOpenApiDocument } from './document';
import { documentedApiRequests, prefixMatches, serviceForPath } from './routes';

describe('the routing table', () => {
  const requests = documentedApiRequests(buildOpenApiDocument());

  it('lists every documented operation under the base URL, and none of the per-service ones', () => {
    expect(requests.map((r) => `${r.method} ${r.documented}`)).toEqual(
      expect.arrayContaining(['POST /v1-batch', 'POST /segment/v1/track', 'GET /openapi.json', 'GET /v1-profiles/{id}/erase', 'GET /v1-consent']),
    );
    expect(requests.some((r) => /healthz|readyz/.test(r.path))).toBe(false);
    expect(requests.find((r) => r.documented === '/v1-profiles/{id}')?.path).toBe('/functions/v1/v1-profiles/placeholder');
  });

  it.each([
    ['/functions/v1/v1-batch', 'ingest-gateway'],
    ['/functions/v1/segment/v1/batch', 'ingest-gateway'],
    ['/functions/v1/openapi.json', 'ingest-gateway'],
    ['/functions/v1/no-such-route', 'ingest-gateway'],
    ['/functions/v1/v1-profiles', 'profile-api'],
    ['/functions/v1/v1-profiles/abc/events', 'profile-api'],
    ['/functions/v1/v1-consent', 'consent-api'],
    // Element by element: a longer name is not below the prefix.
    ['/functions/v1/v1-consentx', 'ingest-gateway'],
    ['/functions/v2/v1-batch', undefined],
    ['/healthz', undefined],
  ])('%s is answered by %s', (path, service) => {
    expect(serviceForPath(path)).toBe(service);
  });

  it('has a service for every documented operation', () => {
    for (const r of requests) expect({ path: r.path, service: serviceForPath(r.path) }).toEqual({ path: r.path, service: expect.any(String) });
  });

  it.each([
    ['/a', '/a', true],
    ['/a', '/a/b', true],
    ['/a/', '/a/b', true],
    ['/a', '/ab', false],
    ['/a/b', '/a', false],
  ])('prefix %s matches %s: %s', (prefix, path, expected) => {
    expect(prefixMatches(prefix, path)).toBe(expected);
  });
});
