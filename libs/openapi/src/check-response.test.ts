import { describe, expect, it } from '@jest/globals';
import { EventReasons, Messages } from '@svc/contracts';
import { createResponseChecker, type ReceivedResponse } from './check-response';
import { buildOpenApiDocument } from './document';

const check = createResponseChecker(buildOpenApiDocument());
const JSON_TYPE = 'application/json; charset=utf-8';
const profile = { id: '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f', canonical_id: 'prf_X', identities: [], stats: { total_sessions: 0, events_last_30_days: 0 }, identified: false, user_id: null, first_touch: null, last_touch: null, first_seen_at: '2026-11-21T12:00:00.000Z', last_seen_at: '2026-11-21T12:00:00.000Z', event_count: 1, engagement_score: 0, created_at: '2026-11-21T12:00:00.000Z' };
const res = (method: string, path: string, status: number, body: unknown, contentType: string | undefined = JSON_TYPE): ReceivedResponse => ({ method, path, status, contentType, body: typeof body === 'string' ? body : JSON.stringify(body) });

/** [case, response, a problem is expected (its text contains this), or null for none]. */
const CASES: Array<[string, ReceivedResponse, string | null]> = [
  ['a documented 200', res('POST', '/functions/v1/v1-batch', 200, { success: true, processed: 1, failed: 0, duration_ms: 3 }), null],
  ['a documented partial failure', res('POST', '/functions/v1/segment/v1/batch', 200, { success: false, processed: 0, failed: 1, errors: [`m: ${EventReasons.invalidUserId}`], duration_ms: 3 }), null],
  ['a field the document does not name', res('POST', '/functions/v1/v1-batch', 200, { success: true, processed: 1, failed: 0, duration_ms: 3, debug: 'x' }), 'must NOT have additional properties (debug)'],
  ['a missing field', res('POST', '/functions/v1/v1-batch', 200, { success: true, processed: 1, failed: 0 }), "must have required property 'duration_ms'"],
  ['a status the route does not document', res('POST', '/functions/v1/v1-batch', 404, { success: false, error: Messages.notFound }), 'status 404 is not documented'],
  ['a path nobody documents, answered', res('GET', '/functions/v1/v2-things', 200, {}), 'no documented path matches'],
  ['a path nobody documents, refused with the 404 envelope', res('GET', '/functions/v1/v2-things', 404, { success: false, error: Messages.notFound }), null],
  ['a trailing slash and another letter case, as express routes them', res('POST', '/functions/v1/V1-Batch//', 200, { success: true, processed: 0, failed: 0, duration_ms: 1 }), null],
  ['not JSON', res('GET', '/healthz', 200, 'ok', 'text/plain'), 'the body is not JSON'],
  ['JSON under another Content-Type', res('GET', '/healthz', 200, { status: 'ok' }, 'text/plain'), 'is not application/json'],
  ['a probe at the root', res('GET', '/healthz', 200, { status: 'ok' }), null],
  ['the spec’s per-organisation 429 (only error)', res('POST', '/functions/v1/v1-batch', 429, { error: Messages.rateLimitedPerOrg(2000) }), null],
  ['the 413 without its limit', res('POST', '/functions/v1/v1-batch', 413, { success: false, error: Messages.bodyTooLarge(1_048_576) }), "must have required property 'limit_bytes'"],
  ['a literal path beats a template', res('GET', '/functions/v1/v1-profiles/search?q=x', 200, { success: true, profiles: [], count: 0 }), null],
  ['a template takes any id', res('GET', '/functions/v1/v1-profiles/prf_X', 200, { success: true, profile }), null],
  ['a nested object is closed too', res('GET', '/functions/v1/v1-profiles/prf_X', 200, { success: true, profile: { ...profile, secret: 1 } }), '/profile must NOT have additional properties (secret)'],
  ['405 on a method the path does not document', res('GET', '/functions/v1/v1-batch', 405, { success: false, error: Messages.methodNotAllowed }), null],
  ['a 200 on a method the path does not document', res('DELETE', '/functions/v1/v1-consent', 200, { success: true }), 'DELETE is not documented'],
  ['a refusal without the envelope', res('PUT', '/functions/v1/v1-batch', 405, { error: 'no' }), 'without the error envelope'],
];

describe('createResponseChecker', () => {
  it.each(CASES)('%s', (_name, response, problem) => {
    const problems = check(response);
    if (problem === null) expect(problems).toEqual([]);
    else expect(problems.join('\n')).toContain(problem);
  });
});
