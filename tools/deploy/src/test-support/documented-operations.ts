import { BASE_PATH, buildOpenApiDocument, documentedApiRequests } from '@svc/openapi';

/** A request through a deployment's front door; `route` is the path under the API's base path, from its `/`. */
export type SendThroughEdge = (method: string, route: string, key: string, body?: unknown) => Promise<{ status: number }>;

/**
 * `<method> <documented path> <status>` for every operation of the OpenAPI
 * document, each sent with a key that is none (and an empty body where one
 * goes): whatever the answer, a 404 says the routing does not reach it.
 */
export async function answersToEveryDocumentedOperation(send: SendThroughEdge): Promise<string[]> {
  const answers: string[] = [];
  for (const r of documentedApiRequests(buildOpenApiDocument())) {
    const { status } = await send(r.method, r.path.slice(BASE_PATH.length), 'uk_live_not_a_key', r.method === 'GET' ? undefined : {});
    answers.push(`${r.method} ${r.documented} ${status}`);
  }
  return answers;
}
