#!/usr/bin/env node
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildAsyncApiDocument } from './asyncapi';
import { buildOpenApiDocument } from './document';

/** `npm run openapi`: writes the generated documents beside this package, the committed copies: openapi.json (the HTTP API) and asyncapi.json (the topics). */
for (const [file, document] of [
  ['openapi.json', buildOpenApiDocument()],
  ['asyncapi.json', buildAsyncApiDocument()],
] as const) {
  const target = path.join(__dirname, '..', file);
  writeFileSync(target, `${JSON.stringify(document, null, 2)}\n`);
  process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);
}
