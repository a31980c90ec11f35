import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { BASE_PATH } from './document';
import type { Json } from './json-schema';

/** A response as a client received it. */
export interface ReceivedResponse {
  method: string;
  /** The request's path, e.g. `/functions/v1/v1-profiles/abc/events` (a query string is ignored). */
  path: string;
  status: number;
  /** The Content-Type header, if any. */
  contentType: string | undefined;
  /** The body as text. */
  body: string;
}

type JsonObject = { [key: string]: Json };
const DOCUMENT_ID = 'openapi.json';
const isObject = (v: Json | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks responses against an OpenAPI document: the route (path and
 * method) must be documented, the status documented for it, and the body
 * valid against the schema of that status, so an undocumented field (every
 * object is closed), status or route is a problem. A method the path does
 * not document may only be refused (405, or 404 under /v1-profiles), as the
 * spec says, with the error envelope; a CORS preflight only answered (204);
 * and a path no operation has, only with the 404 envelope.
 * Returns the problems found; none when the response is documented.
 */
export function createResponseChecker(document: Json): (response: ReceivedResponse) => string[] {
  if (!isObject(document) || !isObject(document.paths)) throw new Error('not an OpenAPI document: no paths');
  const paths = document.paths;
  const templates = Object.keys(paths).map((template) => ({ template, segments: template.split('/') }));
  // The whole document is added as one schema, so the `#/components/schemas/...` references inside resolve.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(document as object, DOCUMENT_ID);
  const compiled = new Map<string, ValidateFunction>();

  const match = (path: string): string | undefined => {
    // Express routes ignore trailing slashes and letter case, so the document's paths are matched the same way.
    const wanted = path.split('?')[0]!.replace(/(.)\/+$/, '$1');
    const candidates = templates.filter(({ template }) => {
      const rooted = isObject(paths[template]) && Array.isArray((paths[template] as JsonObject).servers);
      return rooted ? true : wanted.toLowerCase().startsWith(`${BASE_PATH.toLowerCase()}/`);
    });
    const found = candidates
      .map(({ template, segments }) => {
        const rooted = Array.isArray((paths[template] as JsonObject).servers);
        const actual = (rooted ? wanted : wanted.slice(BASE_PATH.length)).split('/');
        if (actual.length !== segments.length) return undefined;
        let templated = 0;
        for (let i = 0; i < segments.length; i++) {
          const s = segments[i]!;
          if (/^\{.+\}$/.test(s)) {
            if (actual[i] === '') return undefined;
            templated++;
          } else if (s.toLowerCase() !== actual[i]!.toLowerCase()) return undefined;
        }
        return { template, templated };
      })
      .filter((m): m is { template: string; templated: number } => m !== undefined)
      // A literal segment beats a template: /v1-profiles/search is not profile "search".
      .sort((a, b) => a.templated - b.templated);
    return found[0]?.template;
  };

  const isEnvelope = (body: Json): boolean => isObject(body) && body.success === false && typeof body.error === 'string';

  return (r) => {
    const template = match(r.path);
    let body: Json;
    try {
      body = r.body === '' ? null : (JSON.parse(r.body) as Json);
    } catch {
      return [`${r.method} ${r.path} ${r.status}: the body is not JSON`];
    }
    // No route: the one answer for a path the document does not have is the spec's 404.
    if (template === undefined) return r.status === 404 && isEnvelope(body) ? [] : [`${r.method} ${r.path} ${r.status}: no documented path matches, and the answer is not a 404`];
    const item = paths[template] as JsonObject;
    const method = r.method.toLowerCase();
    const where = `${r.method} ${template} ${r.status}`;
    const op = item[method];
    if (!isObject(op)) {
      if (method === 'options' && r.status === 204) return [];
      const refused = r.status === 405 || (r.status === 404 && template.startsWith('/v1-profiles'));
      if (!refused) return [`${where}: ${r.method} is not documented on ${template}, and the answer is not a refusal`];
      return isEnvelope(body) ? [] : [`${where}: a refusal without the error envelope`];
    }
    const responses = op.responses as JsonObject;
    const spec = responses[String(r.status)];
    if (!isObject(spec)) return [`${where}: status ${r.status} is not documented (documented: ${Object.keys(responses).join(', ')})`];
    if (!r.contentType?.toLowerCase().startsWith('application/json')) return [`${where}: Content-Type ${r.contentType ?? '(none)'} is not application/json`];
    const key = `${template} ${method} ${r.status}`;
    let validate = compiled.get(key);
    if (!validate) {
      const pointer = ['paths', template, method, 'responses', String(r.status), 'content', 'application/json', 'schema'].map((p) => encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#/${pointer}` });
      compiled.set(key, validate);
    }
    if (validate(body)) return [];
    return (validate.errors ?? []).map((e) => `${where}: ${e.instancePath || '/'} ${e.message ?? 'is invalid'}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`);
  };
}
