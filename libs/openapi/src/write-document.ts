#!/usr/bin/env node
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildOpenApiDocument } from './document';

/** `npm run openapi`: writes the generated document to libs/openapi/openapi.json, the committed copy. */
const DOCUMENT_FILE = path.join(__dirname, '..', 'openapi.json');
writeFileSync(DOCUMENT_FILE, `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
process.stdout.write(`wrote ${path.relative(process.cwd(), DOCUMENT_FILE)}\n`);
