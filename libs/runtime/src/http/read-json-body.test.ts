import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BodyLimitHints, Messages } from '@svc/contracts';
import { rejectOversizedContentLength } from './body-limit';
import { sendJson } from './json-response';
import { isJsonContentType, readJsonBody } from './read-json-body';
import { BASE_PATH, rawRequest, startTestApp, streamingUpload, waitForClose, type TestApp } from './test-support';

/** The spec's limits (Limits table): 1 MiB for /v1-batch, 256 KiB elsewhere. */
const BATCH_LIMIT = 1_048_576;
const GENERIC_LIMIT = 262_144;
const CHUNK = 64 * 1024;

const tooLargeBody = (limit: number, hint: string): Record<string, unknown> => ({
  success: false,
  error: Messages.bodyTooLarge(limit),
  limit_bytes: limit,
  hint,
});

/** A JSON document (a string) of exactly `bytes` bytes. */
const jsonOfSize = (bytes: number): string => `"${'a'.repeat(bytes - 2)}"`;

/** Retries an assertion until it passes or ~2 s have gone by. */
async function eventually(assertion: () => void): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      assertion();
      return;
    } catch (err) {
      if (attempt >= 40) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

let app: TestApp;
/** What each handler saw: whether it ran, and how its body read ended. */
const seen = { ran: 0, outcome: '' };

beforeAll(async () => {
  app = await startTestApp((router) => {
    // Stand-in for the ingestion route: declared-size check first, then "auth", then the body.
    router.post('/v1-batch', rejectOversizedContentLength(BATCH_LIMIT, BodyLimitHints.batch), async (req, res) => {
      seen.ran += 1;
      const body = await readJsonBody(req, { limitBytes: BATCH_LIMIT, hint: BodyLimitHints.batch });
      sendJson(res, 200, { received: body });
    });
    router.post('/echo', async (req, res) => {
      seen.ran += 1;
      try {
        const body = await readJsonBody(req, { limitBytes: GENERIC_LIMIT, hint: BodyLimitHints.generic });
        seen.outcome = 'ok';
        sendJson(res, 200, { received: body });
      } catch (err) {
        seen.outcome = err instanceof Error ? err.message : 'unknown';
        throw err;
      }
    });
    router.post('/twice', async (req, res) => {
      await readJsonBody(req, { limitBytes: GENERIC_LIMIT, hint: BodyLimitHints.generic });
      await readJsonBody(req, { limitBytes: GENERIC_LIMIT, hint: BodyLimitHints.generic });
      sendJson(res, 200, {});
    });
  });
});

afterAll(async () => {
  await app.close();
});

const post = (path: string, body: string | Buffer | undefined, headers: Record<string, string> = {}) =>
  rawRequest(app.port, { method: 'POST', path: `${BASE_PATH}${path}`, headers, body });

describe('a body that arrives in several chunks', () => {
  /** A request whose body arrives in exactly these chunks. */
  const arriving = (chunks: readonly Buffer[]): IncomingMessage =>
    Object.assign(Readable.from(chunks), { headers: { 'content-type': 'application/json' } }) as unknown as IncomingMessage;
  const read = (chunks: readonly Buffer[]) => readJsonBody(arriving(chunks), { limitBytes: GENERIC_LIMIT, hint: BodyLimitHints.generic });
  const text = '{"name":"Zoë 🚀","n":[1,2]}';
  const bytes = Buffer.from(text);

  it.each([
    ['inside a two-byte character', bytes.indexOf(0xc3) + 1],
    ['inside a four-byte character', bytes.indexOf(0xf0) + 2],
    ['between two characters', 5],
  ])('decodes a body split %s', async (_, at) => {
    await expect(read([bytes.subarray(0, at), bytes.subarray(at)])).resolves.toEqual(JSON.parse(text));
  });

  it('decodes a body of many one-byte chunks', async () => {
    await expect(read([...bytes].map((b) => Buffer.from([b])))).resolves.toEqual(JSON.parse(text));
  });

  it.each([
    ['a character cut short at the end', [Buffer.from('"Zo'), Buffer.from([0xc3])]],
    ['a malformed byte in a later chunk', [Buffer.from('{"a":"'), Buffer.from([0xff, 0x22, 0x7d])]],
    ['JSON cut between chunks and never finished', [Buffer.from('{"a":'), Buffer.from('  ')]],
  ])('refuses %s as invalid JSON', async (_, chunks) => {
    await expect(read(chunks)).rejects.toMatchObject({ status: 400, message: Messages.invalidJson });
  });

  it('refuses chunks of nothing but whitespace as an empty body', async () => {
    await expect(read([Buffer.from(' \n'), Buffer.from('\t '), Buffer.from('\r')])).rejects.toMatchObject({ status: 400, message: Messages.emptyBody });
  });
});

describe('Content-Type', () => {
  const cases: Array<{ contentType: string | undefined; accepted: boolean }> = [
    { contentType: undefined, accepted: false },
    { contentType: 'text/plain', accepted: false },
    { contentType: 'application/x-www-form-urlencoded', accepted: false },
    { contentType: 'application/jsonx', accepted: false },
    { contentType: 'application/vnd.api+json', accepted: false },
    { contentType: 'text/json', accepted: false },
    { contentType: 'application/json', accepted: true },
    { contentType: 'application/json; charset=utf-8', accepted: true },
    { contentType: 'application/json;charset=UTF-8', accepted: true },
    { contentType: 'APPLICATION/JSON', accepted: true },
    { contentType: 'Application/Json ; charset=utf-8', accepted: true },
  ];

  it.each(cases)('$contentType → accepted: $accepted', async ({ contentType, accepted }) => {
    const headers: Record<string, string> = contentType === undefined ? {} : { 'content-type': contentType };
    const res = await post('/echo', '{"a":1}', headers);
    if (accepted) {
      expect(res.status).toBe(200);
      expect(res.json()).toStrictEqual({ received: { a: 1 } });
    } else {
      expect(res.status).toBe(400);
      expect(res.json()).toStrictEqual({ success: false, error: Messages.contentTypeNotJson });
    }
  });

  it.each(cases)('isJsonContentType($contentType) is $accepted', ({ contentType, accepted }) => {
    expect(isJsonContentType(contentType)).toBe(accepted);
  });
});

describe('body content', () => {
  const json = { 'content-type': 'application/json' };
  const cases: Array<{ name: string; body: string | Buffer; status: number; expected: unknown }> = [
    { name: 'zero bytes', body: '', status: 400, expected: { success: false, error: Messages.emptyBody } },
    { name: 'only spaces', body: '   ', status: 400, expected: { success: false, error: Messages.emptyBody } },
    { name: 'mixed whitespace', body: ' \n\t\r\n ', status: 400, expected: { success: false, error: Messages.emptyBody } },
    { name: 'truncated object', body: '{"batch": [', status: 400, expected: { success: false, error: Messages.invalidJson } },
    { name: 'trailing garbage', body: '{"a":1} x', status: 400, expected: { success: false, error: Messages.invalidJson } },
    { name: 'single quotes', body: "{'a':1}", status: 400, expected: { success: false, error: Messages.invalidJson } },
    { name: 'bare word', body: 'undefined', status: 400, expected: { success: false, error: Messages.invalidJson } },
    {
      name: 'invalid UTF-8',
      body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      status: 400,
      expected: { success: false, error: Messages.invalidJson },
    },
    { name: 'object', body: '{"batch":[{"type":"track"}]}', status: 200, expected: { received: { batch: [{ type: 'track' }] } } },
    { name: 'surrounding whitespace', body: '\n {"a":1} \n', status: 200, expected: { received: { a: 1 } } },
    { name: 'UTF-8 BOM', body: '\uFEFF{"a":1}', status: 200, expected: { received: { a: 1 } } },
    { name: 'multi-byte characters', body: '{"name":"Zoë 🚀"}', status: 200, expected: { received: { name: 'Zoë 🚀' } } },
    { name: 'JSON null (shape is the caller’s business)', body: 'null', status: 200, expected: { received: null } },
  ];

  it.each(cases)('$name → $status', async ({ body, status, expected }) => {
    const res = await post('/echo', body, json);
    expect(res.status).toBe(status);
    expect(res.json()).toStrictEqual(expected);
  });

  it('the same rules apply to a chunked body (no Content-Length)', async () => {
    const res = await post('/echo', '{"a":1}', { ...json, 'transfer-encoding': 'chunked' });
    expect(res.status).toBe(200);
    expect(res.json()).toStrictEqual({ received: { a: 1 } });
  });

  it('reading a body twice is a programming error, reported as a bare 500', async () => {
    const res = await post('/twice', '{}', json);
    expect(res.status).toBe(500);
    expect(res.json()).toStrictEqual({ success: false, error: Messages.internalError });
  });
});

describe('body size limits', () => {
  const json = { 'content-type': 'application/json' };

  it.each([
    { name: 'generic', path: '/echo', limit: GENERIC_LIMIT, hint: BodyLimitHints.generic },
    { name: 'batch', path: '/v1-batch', limit: BATCH_LIMIT, hint: BodyLimitHints.batch },
  ])('$name: a body of exactly the limit is accepted, one byte more is a 413', async ({ path, limit, hint }) => {
    const atLimit = await post(path, jsonOfSize(limit), json);
    expect(atLimit.status).toBe(200);

    const over = await post(path, jsonOfSize(limit + 1), json);
    expect(over.status).toBe(413);
    expect(over.json()).toStrictEqual(tooLargeBody(limit, hint));
  });

  it('exactly the limit is accepted when streamed without Content-Length', async () => {
    const res = await post('/echo', jsonOfSize(GENERIC_LIMIT), { ...json, 'transfer-encoding': 'chunked' });
    expect(res.status).toBe(200);
  });

  it('413 from the declared Content-Length before the handler runs (batch route)', async () => {
    seen.ran = 0;
    const res = await post('/v1-batch', undefined, { ...json, 'content-length': String(BATCH_LIMIT + 1) });
    expect(res.status).toBe(413);
    expect(res.json()).toStrictEqual(tooLargeBody(BATCH_LIMIT, BodyLimitHints.batch));
    expect(res.headers.connection).toBe('close');
    expect(seen.ran).toBe(0);
  });

  it('readJsonBody itself also honours the declared Content-Length (no middleware)', async () => {
    const res = await post('/echo', undefined, { ...json, 'content-length': String(GENERIC_LIMIT + 1) });
    expect(res.status).toBe(413);
    expect(res.json()).toStrictEqual(tooLargeBody(GENERIC_LIMIT, BodyLimitHints.generic));
  });

  it.each<{ name: string; headers: Record<string, string> }>([
    { name: 'chunked', headers: {} },
    // node answers 100 Continue before routing; the streamed limit applies all the same.
    { name: 'chunked with Expect: 100-continue', headers: { expect: '100-continue' } },
  ])('413 while streaming ($name): stops reading at the limit and still answers', async ({ headers }) => {
    const socketsBefore = app.sockets.length;
    const total = 8 * 1024 * 1024;
    const { response } = await streamingUpload(app.port, {
      path: `${BASE_PATH}/echo`,
      headers,
      chunkSize: CHUNK,
      totalBytes: total,
    });
    expect(response.status).toBe(413);
    expect(response.json()).toStrictEqual(tooLargeBody(GENERIC_LIMIT, BodyLimitHints.generic));
    expect(response.headers.connection).toBe('close');
    expect(response.headers['x-request-id']).toBeDefined();

    const serverSocket = app.sockets[socketsBefore];
    expect(serverSocket).toBeDefined();
    await waitForClose(serverSocket!);
    // The server read the limit plus what was already in flight: the chunk that crossed
    // the limit, node's 16 KiB request buffer and one 64 KiB socket read. Not the 8 MiB.
    expect(serverSocket!.bytesRead).toBeGreaterThan(GENERIC_LIMIT);
    expect(serverSocket!.bytesRead).toBeLessThan(GENERIC_LIMIT + 3 * CHUNK);
  });

  it('the server keeps serving after refusing streamed bodies', async () => {
    const uploads = Array.from({ length: 5 }, () =>
      streamingUpload(app.port, { path: `${BASE_PATH}/echo`, chunkSize: CHUNK, totalBytes: 4 * 1024 * 1024 }),
    );
    for (const { response } of await Promise.all(uploads)) expect(response.status).toBe(413);
    const res = await post('/echo', '{"still":"alive"}', json);
    expect(res.json()).toStrictEqual({ received: { still: 'alive' } });
  });

  it('works with fetch uploading a body over the limit', async () => {
    const res = await fetch(`${app.url}${BASE_PATH}/echo`, {
      method: 'POST',
      headers: json,
      body: Buffer.alloc(4 * 1024 * 1024, 0x20),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toStrictEqual(tooLargeBody(GENERIC_LIMIT, BodyLimitHints.generic));
  });

  it('a client that disconnects mid-body does not crash the server; the read settles', async () => {
    seen.outcome = '';
    await new Promise<void>((resolve) => {
      const socket = connect(app.port, '127.0.0.1', () => {
        socket.write(
          `POST ${BASE_PATH}/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":`,
        );
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 50);
      });
    });
    await eventually(() => expect(seen.outcome).toBe(Messages.invalidJson));
    const res = await post('/echo', '{}', json);
    expect(res.status).toBe(200);
  });
});
