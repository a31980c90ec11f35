import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { IncomingMessage } from 'node:http';
import { BodyLimitHints, Limits, Messages } from '@svc/contracts';
import { HttpError, parseJson, payloadTooLarge, readBounded } from '@svc/runtime';

const gunzipAsync = promisify(gunzip);
const LIMIT = Limits.batchBodyBytes;

/**
 * A Segment-compatible request's body as JSON. Unlike /v1-batch, any
 * Content-Type is read as JSON: RudderStack's library posts gzip with
 * axios's defaults, and a browser's sendBeacon can only send text/plain
 * without a preflight. `Content-Encoding: gzip` (RudderStack's default) is
 * decompressed; the 1 MiB limit holds for the bytes sent and again for the
 * bytes they decompress to, so a small bomb cannot make a large body.
 */
export async function readSegmentBody(req: IncomingMessage, options: { keyAtStart?: (key: string) => Promise<void> } = {}): Promise<unknown> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') throw new HttpError(400, Messages.unsupportedContentEncoding);
  const { keyAtStart } = options;
  // A key the body names first (as the browser library's beacon sends it) is
  // checked from the body's first bytes, before the rest is read; elsewhere in
  // the body, or in a gzip body, it is found once the whole body is read.
  const start = keyAtStart && encoding === 'identity' ? { bytes: KEY_START_BYTES, check: async (head: Buffer) => keyNamedFirst(head, keyAtStart) } : undefined;
  const sent = await readBounded(req, { limitBytes: LIMIT, hint: BodyLimitHints.batch, ...(start ? { start } : {}) });
  return parseJson(encoding === 'gzip' ? await decompress(sent) : sent);
}

async function decompress(sent: Buffer): Promise<Buffer> {
  try {
    return await gunzipAsync(sent, { maxOutputLength: LIMIT });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw payloadTooLarge(LIMIT, BodyLimitHints.batch);
    throw new HttpError(400, Messages.invalidGzipBody);
  }
}

/** How much of a body is looked at for a key named first: `{"writeKey":"<key>"` fits well within it. */
const KEY_START_BYTES = 1024;
const KEY_FIRST = /^\s*\{\s*"writeKey"\s*:\s*"([^"\\]{1,200})"/;

async function keyNamedFirst(head: Buffer, check: (key: string) => Promise<void>): Promise<void> {
  const key = KEY_FIRST.exec(head.subarray(0, KEY_START_BYTES).toString('utf8'))?.[1];
  if (key !== undefined) await check(key);
}
