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
export async function readSegmentBody(req: IncomingMessage): Promise<unknown> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') throw new HttpError(400, Messages.unsupportedContentEncoding);
  const sent = await readBounded(req, { limitBytes: LIMIT, hint: BodyLimitHints.batch });
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
