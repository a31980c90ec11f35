import { createResponseChecker } from './check-response';
import { buildOpenApiDocument } from './document';

let check: ReturnType<typeof createResponseChecker> | undefined;

/**
 * `fetch` for integration tests: the same request, and a rejection when the
 * answer is not the OpenAPI document's for its route and status (an
 * undocumented route, status or field). Resolves to an equal Response whose
 * body can still be read.
 */
export async function documentedFetch(url: string, init?: RequestInit): Promise<Response> {
  const res = await fetch(url, init);
  const body = await res.text();
  check ??= createResponseChecker(buildOpenApiDocument());
  const problems = check({ method: init?.method ?? 'GET', path: new URL(url).pathname, status: res.status, contentType: res.headers.get('content-type') ?? undefined, body });
  if (problems.length > 0) throw new Error(`undocumented response:\n${problems.join('\n')}`);
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}
