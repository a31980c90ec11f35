import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { Limits, Messages } from '@svc/contracts';
import { createResponseChecker } from './check-response';
import { buildOpenApiDocument } from './document';
import type { Json } from './json-schema';

type JsonObject = { [key: string]: Json };
const document = buildOpenApiDocument() as JsonObject;
const paths = document.paths as Record<string, JsonObject>;

describe('the OpenAPI document', () => {
  it('is committed as generated (run `npm run openapi` after changing a contract or a route)', () => {
    const committed = JSON.parse(readFileSync(path.join(__dirname, '..', 'openapi.json'), 'utf8')) as Json;
    expect(committed).toEqual(document);
  });

  /** Every route of the interface spec and every Segment-compatible one: [method, path]. */
  const ROUTES: Array<[string, string]> = [
    ['post', '/v1-batch'],
    ['post', '/v1-consent'],
    ['get', '/v1-consent'],
    ['get', '/v1-profiles'],
    ['get', '/v1-profiles/search'],
    ['get', '/v1-profiles/{id}'],
    ['get', '/v1-profiles/{id}/events'],
    ['get', '/v1-profiles/{id}/identities'],
    ['post', '/v1-profiles/merge'],
    ['post', '/v1-profiles/{id}/erase'],
    ['post', '/v1-profiles/erase'],
    ['get', '/v1-profiles/{id}/erase'],
    ...['batch', 'track', 'identify', 'page', 'screen', 'alias', 'group'].map((p): [string, string] => ['post', `/segment/v1/${p}`]),
  ];
  it.each(ROUTES)('documents %s %s', (method, route) => {
    expect(paths[route]?.[method]).toBeDefined();
  });

  const examples: Array<{ where: string; value: Json }> = [];
  for (const [route, item] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (method === 'servers') continue;
      for (const [status, response] of Object.entries((op as JsonObject).responses as JsonObject)) {
        const media = ((response as JsonObject).content as JsonObject)['application/json'] as JsonObject;
        for (const [name, example] of Object.entries((media.examples ?? {}) as JsonObject)) {
          examples.push({ where: `${method.toUpperCase()} ${route} ${status} ${name}`, value: (example as JsonObject).value! });
        }
      }
    }
  }

  /** The spec's exact messages that responses carry: each is an example of the document. */
  const SPEC_MESSAGES = [
    Messages.missingAuthorization,
    Messages.invalidAuthorizationFormat,
    Messages.emptyApiKey,
    Messages.invalidApiKey,
    Messages.insufficientPermissions('write or admin'),
    Messages.insufficientPermissions('read or admin'),
    Messages.insufficientPermissions('admin'),
    Messages.contentTypeNotJson,
    Messages.emptyBody,
    Messages.invalidJson,
    Messages.batchRequired,
    Messages.batchTooLarge,
    Messages.notFound,
    Messages.profileNotFound,
    Messages.mergeProfilesNotFound,
    Messages.invalidCursor,
    Messages.searchParameterRequired,
    Messages.rateLimitedPerIp(Limits.rate.batchPerOrgIp),
    Messages.rateLimitedPerOrg(Limits.rate.batchPerOrg),
    Messages.quotaPaused,
    Messages.monthlyLimitReached,
    Messages.bodyTooLarge(Limits.batchBodyBytes),
    Messages.bodyTooLarge(Limits.smallBodyBytes),
    Messages.usageCheckFailed,
    Messages.internalError,
    Messages.authenticationFailed,
    // Additive: the erasure routes' own.
    Messages.erasureAlreadyRequested,
    Messages.erasureNotFound,
    Messages.erasureIdentifierRequired,
    Messages.erasureBodyNotObject,
    Messages.erasureReasonInvalid,
    Messages.bodyTooLarge(Limits.smallBodyBytes),
    Messages.rateLimitedPerIp(Limits.rate.profilesErasePerOrgIp),
  ];
  it.each(SPEC_MESSAGES)('quotes %j as an example', (message) => {
    expect(examples.some((e) => (e.value as JsonObject).error === message)).toBe(true);
  });

  it('has examples that its own schemas accept', () => {
    const check = createResponseChecker(document);
    const problems = examples.flatMap(({ where, value }) => {
      const [method, route, status] = where.split(' ');
      const concrete = `/functions/v1${route!.replace('{id}', 'prf_X')}`;
      return check({ method: method!, path: route === '/healthz' || route === '/readyz' ? route : concrete, status: Number(status), contentType: 'application/json', body: JSON.stringify(value) }).map((p) => `${where}: ${p}`);
    });
    expect(examples.length).toBeGreaterThan(100);
    expect(problems).toEqual([]);
  });
});
