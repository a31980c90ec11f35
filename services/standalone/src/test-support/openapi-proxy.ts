import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createResponseChecker, OPENAPI_PATH, BASE_PATH, type Json } from '@svc/openapi';

export interface CheckedExchange {
  method: string;
  path: string;
  status: number;
}

export interface OpenApiProxy {
  /** The proxy's origin, e.g. `http://127.0.0.1:4567`: clients are pointed here instead of at the stack. */
  origin: string;
  /** Every exchange that went through, in order. */
  exchanges: CheckedExchange[];
  /** Every response that the document does not describe (an undocumented route, status or field). */
  problems: string[];
  close(): Promise<void>;
}

/**
 * A reverse proxy on 127.0.0.1 in front of the stack that checks every
 * response against the OpenAPI document the stack itself serves: whatever
 * the client (a Node library, a Python process), each answer it got was
 * the document's for that route and status. Bodies pass through untouched
 * (gzip included).
 */
export async function startOpenApiProxy(targetPort: number): Promise<OpenApiProxy> {
  const served = await fetch(`http://127.0.0.1:${targetPort}${BASE_PATH}${OPENAPI_PATH}`);
  if (served.status !== 200) throw new Error(`the stack serves no OpenAPI document: ${served.status}`);
  const check = createResponseChecker((await served.json()) as Json);
  const exchanges: CheckedExchange[] = [];
  const problems: string[] = [];

  const server = http.createServer((req, res) => {
    const upstream = http.request(
      { host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const body = Buffer.concat(chunks);
          const path = (req.url ?? '/').split('?')[0]!;
          const status = answer.statusCode ?? 0;
          exchanges.push({ method: req.method ?? '', path, status });
          problems.push(...check({ method: req.method ?? '', path, status, contentType: answer.headers['content-type'], body: body.toString('utf8') }));
          res.writeHead(status, answer.headers);
          res.end(body);
        });
      },
    );
    upstream.on('error', (err) => {
      problems.push(`${req.method} ${req.url}: the stack did not answer: ${err.message}`);
      res.destroy(err);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    exchanges,
    problems,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
