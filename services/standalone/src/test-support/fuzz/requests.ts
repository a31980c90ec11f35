import fc from 'fast-check';
import { CONSENT_PURPOSES } from '@svc/contracts';
import { batch, hostileString, hostileValue, mutatedEvent, wideObject } from '@svc/testkit';
import type { RawRequest } from './raw-http';

/** What the generated requests aim at: keys of each type and profile ids of the caller's and of another organisation. */
export interface FuzzTargets {
  orgId: string;
  keys: { write: string; read: string; admin: string };
  /** Ids (UUIDs and canonical ids) of profiles of the caller's organisation. */
  ownProfileIds: readonly string[];
  /** Ids of another organisation's profiles: never readable, never mergeable. */
  foreignProfileIds: readonly string[];
  /** Identifiers stored for the caller's organisation (anonymous ids, user ids, emails). */
  ownIdentifiers: readonly string[];
}

export type RouteKind = 'batch' | 'consent' | 'profiles' | 'merge' | 'other';

export interface FuzzRequest extends RawRequest {
  kind: RouteKind;
  /** The organisation whose keys the request was aimed with. */
  orgId: string;
  /** For a batch: the events as the server will parse them (undefined when the body is not a batch). */
  sentBatch?: unknown[];
}

const BASE = '/functions/v1';

/** Every byte outside the unreserved set, percent-encoded: a lone surrogate or U+0000 reaches the server as bytes. */
const percentEncode = (bytes: Buffer): string => [...bytes].map((b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');

/** Path segments and query values: real ids, other organisations' ids, hostile text, bytes that are not UTF-8, broken escapes. */
const segment = (t: FuzzTargets): fc.Arbitrary<Buffer> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...t.ownProfileIds, ...t.foreignProfileIds).map((s) => Buffer.from(encodeURIComponent(s))) },
    { weight: 3, arbitrary: hostileString.map((s) => Buffer.from(percentEncode(Buffer.from(s, 'utf8')))) },
    { weight: 1, arbitrary: fc.constantFrom('%ED%A0%80', '%FF', '%00', '%C0%AF', '%', '%G1', '%E0%A4', '..', '.', '%2e%2e%2f').map((s) => Buffer.from(s)) },
    // Raw bytes a browser never sends: high bytes straight in the request line.
    { weight: 1, arbitrary: fc.constantFrom([0xed, 0xa0, 0x80], [0xff, 0xfe], [0xc3, 0x28], [0xe2, 0x82]).map((b) => Buffer.from(b)) },
  );

const QUERY_NAMES = ['limit', 'offset', 'sort_by', 'sort_order', 'identified', 'cursor', 'event_name', 'precise_total', 'q', 'query', 'email', 'user_id', 'anonymous_id', 'partial'];

const query = (t: FuzzTargets): fc.Arbitrary<Buffer> =>
  fc
    .array(
      fc.tuple(
        fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom(...QUERY_NAMES).map((n) => Buffer.from(n)) },
          { weight: 1, arbitrary: fc.constantFrom('__proto__', '__proto__[polluted]', 'constructor[prototype][polluted]', 'limit[]', 'q[a][b]').map((n) => Buffer.from(encodeURI(n))) },
          { weight: 1, arbitrary: segment(t) },
        ),
        fc.oneof(
          { weight: 2, arbitrary: fc.oneof(fc.integer({ min: -5, max: 300 }).map(String), fc.constantFrom('true', 'false', 'asc', 'desc', '1', '0', 'last_seen_at', 'event_count')).map((v) => Buffer.from(v)) },
          { weight: 2, arbitrary: fc.constantFrom(...t.ownIdentifiers).map((v) => Buffer.from(encodeURIComponent(v))) },
          { weight: 3, arbitrary: segment(t) },
        ),
      ),
      { maxLength: 4 },
    )
    .map((pairs) => (pairs.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from('?'), ...pairs.flatMap(([k, v], i) => [Buffer.from(i ? '&' : ''), k, Buffer.from('='), v])])));

const authorization = (right: string, t: FuzzTargets): fc.Arbitrary<string | undefined> =>
  fc.oneof(
    { weight: 17, arbitrary: fc.constant(`Bearer ${right}`) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        `Bearer ${t.keys.write}`,
        `Bearer ${t.keys.read}`,
        `Bearer ${t.keys.admin}`,
        'Bearer uk_live_not_a_key',
        'Bearer ',
        `Basic ${Buffer.from(`${right}:`).toString('base64')}`,
        undefined,
      ),
    },
  );

const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 9, arbitrary: fc.constant('application/json') },
  { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/json; charset=utf-16', 'application/json; charset=utf-8', 'application/x-www-form-urlencoded', 'application/json, text/plain', 'multipart/form-data; boundary=x', undefined) },
);

/** Bodies that are not what any route wants: broken JSON, bytes that are not UTF-8, nesting that overflows recursive code, prototype keys. */
const hostileBody: fc.Arbitrary<Buffer> = fc.oneof(
  fc.constantFrom('', '{', 'null', '[]', '"batch"', '{"batch": {}}', '{"batch": null}', '{"__proto__": {"polluted": "yes"}, "batch": []}').map((s) => Buffer.from(s)),
  fc.constant(Buffer.from(`{"batch": [${'['.repeat(100_000)}${']'.repeat(100_000)}]}`)),
  fc.constant(Buffer.from(`{"source_profile_id": ${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}}`)),
  fc.constant(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])),
  fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v))),
  fc.constant(Buffer.from(JSON.stringify(wideObject(500)))),
);

const consentBody = (t: FuzzTargets): fc.Arbitrary<unknown> =>
  fc
    .record({
      anonymousId: fc.oneof(fc.constantFrom(...t.ownIdentifiers), hostileString),
      userId: fc.option(fc.oneof(fc.constantFrom(...t.ownIdentifiers), hostileValue), { nil: undefined }),
      purposes: fc.oneof(
        fc.dictionary(fc.constantFrom(...CONSENT_PURPOSES), fc.boolean(), { minKeys: 1 }),
        fc.dictionary(fc.oneof(fc.constantFrom(...CONSENT_PURPOSES), hostileString), hostileValue, { maxKeys: 3 }),
      ),
      source: fc.option(fc.oneof(fc.constantFrom('banner', 'api'), hostileString), { nil: undefined }),
      timestamp: fc.option(fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), hostileString), { nil: undefined }),
    })
    .chain((body) => fc.option(fc.tuple(fc.constantFrom('anonymousId', 'purposes', '__proto__', 'constructor'), hostileValue), { nil: undefined }).map((m) => (m ? withKey(body, m[0], m[1]) : body)));

const mergeBody = (t: FuzzTargets): fc.Arbitrary<unknown> =>
  fc
    .record({
      source_profile_id: fc.oneof(fc.constantFrom(...t.ownProfileIds, ...t.foreignProfileIds), hostileValue),
      target_profile_id: fc.oneof(fc.constantFrom(...t.ownProfileIds, ...t.foreignProfileIds), hostileValue),
      reason: fc.option(hostileValue, { nil: undefined }),
    })
    .chain((body) => fc.option(fc.tuple(fc.constantFrom('__proto__', 'constructor', 'source_profile_id'), hostileValue), { nil: undefined }).map((m) => (m ? withKey(body, m[0], m[1]) : body)));

/** Sets a key as JSON.parse would make it: `__proto__` becomes an own key, not a prototype. */
function withKey(body: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const out = { ...body };
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  return out;
}

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value) ?? 'null');

interface Shape {
  kind: RouteKind;
  method: string;
  path: Buffer;
  key: string;
  body?: fc.Arbitrary<Buffer | { batch: unknown[] }>;
}

const path = (...parts: Array<string | Buffer>): Buffer => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));

/** One request to one of the routes, mostly well aimed (the right key, a JSON body) so it reaches the code past the front door. */
export function fuzzRequest(t: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  const shapes: fc.Arbitrary<Shape> = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constant<Shape>({
        kind: 'batch',
        method: 'POST',
        path: path(BASE, '/v1-batch'),
        key: t.keys.write,
        body: fc.oneof({ weight: 8, arbitrary: batch(25).map((events) => ({ batch: events })) }, { weight: 1, arbitrary: fc.array(mutatedEvent, { minLength: 90, maxLength: 100 }).map((events) => ({ batch: events })) }, { weight: 1, arbitrary: hostileBody }),
      }),
    },
    { weight: 2, arbitrary: fc.constant<Shape>({ kind: 'consent', method: 'POST', path: path(BASE, '/v1-consent'), key: t.keys.write, body: fc.oneof({ weight: 5, arbitrary: consentBody(t).map(json) }, { weight: 1, arbitrary: hostileBody }) }) },
    { weight: 2, arbitrary: query(t).map<Shape>((q) => ({ kind: 'consent', method: 'GET', path: path(BASE, '/v1-consent', q), key: t.keys.read })) },
    { weight: 2, arbitrary: query(t).map<Shape>((q) => ({ kind: 'profiles', method: 'GET', path: path(BASE, '/v1-profiles', q), key: t.keys.read })) },
    { weight: 2, arbitrary: query(t).map<Shape>((q) => ({ kind: 'profiles', method: 'GET', path: path(BASE, '/v1-profiles/search', q), key: t.keys.read })) },
    {
      weight: 4,
      arbitrary: fc
        .tuple(segment(t), fc.constantFrom('', '/events', '/identities', '/', '/events/extra', '/merge'), query(t))
        .map<Shape>(([id, sub, q]) => ({ kind: 'profiles', method: 'GET', path: path(BASE, '/v1-profiles/', id, sub, q), key: t.keys.read })),
    },
    { weight: 2, arbitrary: fc.constant<Shape>({ kind: 'merge', method: 'POST', path: path(BASE, '/v1-profiles/merge'), key: t.keys.admin, body: fc.oneof({ weight: 5, arbitrary: mergeBody(t).map(json) }, { weight: 1, arbitrary: hostileBody }) }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('PUT', 'DELETE', 'PATCH', 'GET', 'POST', 'OPTIONS', 'HEAD', 'TRACE'), fc.constantFrom('/v1-batch', '/v1-consent', '/v1-profiles', '/v1-profiles/merge', '/v1-nothing', ''), segment(t))
        .map<Shape>(([method, route, extra]) => ({ kind: 'other', method, path: path(BASE, route, '/', extra), key: t.keys.admin, body: fc.constant(Buffer.from('{}')) })),
    },
  );
  return shapes.chain((shape) =>
    fc
      .record({
        auth: authorization(shape.key, t),
        type: contentType,
        ip: fc.ipV4(),
        body: shape.body ?? fc.constant(undefined),
      })
      .map(({ auth, type, ip, body }) => {
        const headers: Array<[string, string]> = [['X-Forwarded-For', ip]];
        if (auth !== undefined) headers.push(['Authorization', auth]);
        if (shape.body && type !== undefined) headers.push(['Content-Type', type]);
        const sentBatch = body !== undefined && !Buffer.isBuffer(body) ? body.batch : undefined;
        const request: FuzzRequest = { kind: shape.kind, orgId: t.orgId, method: shape.method, target: shape.path, headers };
        if (body !== undefined) request.body = Buffer.isBuffer(body) ? body : json(body);
        if (sentBatch) request.sentBatch = JSON.parse(JSON.stringify(sentBatch)) as unknown[];
        return request;
      }),
  );
}
