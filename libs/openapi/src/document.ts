import { API_VERSION, Headers } from '@svc/contracts';
import { SchemaWriter, type Json } from './json-schema';
import { OPERATIONS, type Operation, type Security } from './operations';
import type { ResponseSpec } from './responses';

/** Where the document is served, under the API's base path. */
export const OPENAPI_PATH = '/openapi.json';
/** The API's base path on a host (the spec's `{base_url}`). */
export const BASE_PATH = '/functions/v1';

const TAGS: Record<Operation['tag'], string> = {
  Ingestion: 'POST /v1-batch, as the interface spec fixes it',
  'Segment-compatible ingestion': 'Segment’s HTTP tracking API for Segment’s and RudderStack’s server libraries; the same pipeline as /v1-batch',
  Consent: 'Consent decisions: recorded for the audit trail, not enforced at ingestion',
  Profiles: 'The Profiles API: list, search, read, merge and erase profiles',
  Operations: 'Probes and this document',
};

const SECURITY: Record<Security, Json> = {
  write: [{ bearerAuth: [] }],
  read: [{ bearerAuth: [] }],
  admin: [{ bearerAuth: [] }],
  // Basic (the key as user), Bearer, or no header with `writeKey` in the body.
  segment: [{ writeKeyBasic: [] }, { bearerAuth: [] }, {}],
  none: [],
};

const KEY_NEEDED: Record<Security, string> = {
  write: 'Write or admin key.',
  read: 'Read or admin key.',
  admin: 'Admin key.',
  segment: 'Write or admin key, as the Basic-auth user, a Bearer key or `writeKey` in the body.',
  none: 'No key.',
};

/** Headers on every response (the spec's Errors section). */
const COMMON_HEADERS = [Headers.requestId, Headers.apiVersion];

const HEADER_DOCS: Record<string, { description: string; schema: Json }> = {
  [Headers.requestId]: { description: 'The caller’s X-Request-ID (at most 200 characters of [A-Za-z0-9._-]), else a server-minted UUID', schema: { type: 'string' } },
  [Headers.apiVersion]: { description: 'API version', schema: { type: 'string', const: API_VERSION } },
  [Headers.retryAfter]: { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } },
  [Headers.rateLimitLimit]: { description: 'The limit that was hit, per minute', schema: { type: 'integer', minimum: 0 } },
  [Headers.rateLimitRemaining]: { description: 'Requests left in the window', schema: { type: 'integer', minimum: 0 } },
  [Headers.quotaStatus]: { description: '`grace` on successful ingestion while the organisation is in a billing grace period', schema: { type: 'string', enum: ['grace'] } },
};

/**
 * The OpenAPI 3.1 document of the whole HTTP API, generated from the
 * contracts' schemas and the spec's exact strings (libs/contracts), so it
 * cannot drift from them. `openapi.json` beside this package is this
 * function's output, committed; a test fails when they differ.
 */
export function buildOpenApiDocument(): Json {
  const schemas = new SchemaWriter();
  const paths: Record<string, Record<string, Json>> = {};
  for (const op of OPERATIONS) {
    const item = (paths[op.path] ??= {});
    if (op.atRoot) item.servers = [{ url: 'https://{host}', variables: { host: { default: 'api.example.com' } } }];
    item[op.method] = operation(op, schemas);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Event ingestion, identity and profiles API',
      version: API_VERSION,
      description:
        'Generated from libs/contracts (libs/openapi). Routes, fields, statuses and exact messages follow the interface spec; the Segment-compatible routes and fields marked additive are additions within v1.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: `https://{host}${BASE_PATH}`, description: 'The API’s base_url', variables: { host: { default: 'api.example.com' } } }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: '`Authorization: Bearer <API_KEY>` (`uk_live_`, `uk_read_`, `uk_admin_`)' },
        writeKeyBasic: { type: 'http', scheme: 'basic', description: 'Segment-compatible routes: the write key as the user, empty password' },
      },
      schemas: schemas.componentSchemas(),
      headers: Object.fromEntries(Object.entries(HEADER_DOCS).map(([name, doc]) => [headerRef(name), doc])),
    },
  };
}

function operation(op: Operation, schemas: SchemaWriter): Json {
  return {
    operationId: op.operationId,
    summary: op.summary,
    description: [op.description, KEY_NEEDED[op.security]].filter(Boolean).join(' '),
    tags: [op.tag],
    security: SECURITY[op.security],
    ...(op.parameters
      ? {
          parameters: op.parameters.map((p) => ({
            name: p.name,
            in: p.in,
            description: p.description,
            required: p.required ?? false,
            schema: schemas.write(p.schema),
          })),
        }
      : {}),
    ...(op.requestBody
      ? {
          requestBody: {
            required: true,
            content: Object.fromEntries(
              op.requestBody.contentTypes.map((type) => [
                type,
                {
                  schema: schemas.write(op.requestBody!.schema),
                  ...(op.requestBody!.examples ? { examples: examplesOf(op.requestBody!.examples) } : {}),
                },
              ]),
            ),
          },
        }
      : {}),
    responses: Object.fromEntries(Object.entries(op.responses).map(([status, spec]) => [status, response(spec, op, Number(status), schemas)])),
  };
}

function response(spec: ResponseSpec, op: Operation, status: number, schemas: SchemaWriter): Json {
  const [only, ...more] = spec.schemas.map((s) => schemas.write(s));
  const schema = more.length === 0 ? only! : { oneOf: [only!, ...more] };
  const extra = [...(spec.headers ?? []), ...(status === 200 && op.tag.includes('ngestion') ? [Headers.quotaStatus] : [])];
  return {
    description: spec.description,
    headers: Object.fromEntries([...COMMON_HEADERS, ...extra].map((name) => [name, { $ref: `#/components/headers/${headerRef(name)}` }])),
    content: { 'application/json': { schema, ...(spec.examples.length ? { examples: examplesOf(spec.examples) } : {}) } },
  };
}

const examplesOf = (examples: ReadonlyArray<{ name: string; summary: string; value: Json }>): Json =>
  Object.fromEntries(examples.map((e) => [e.name, { summary: e.summary, value: e.value }]));

const headerRef = (name: string) => name.replace(/[^A-Za-z0-9]/g, '');
