import type { Router } from 'express';
import { buildOpenApiDocument, OPENAPI_PATH } from './document';

/** Serves the document at `GET {base_url}/openapi.json` (no key: it describes, it holds nothing). */
export function mountOpenApiDocument(router: Router): void {
  const body = JSON.stringify(buildOpenApiDocument());
  router.get(OPENAPI_PATH, (_req, res) => {
    res.status(200).set('Content-Type', 'application/json; charset=utf-8').send(body);
  });
}
