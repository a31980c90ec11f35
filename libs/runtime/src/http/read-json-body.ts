import type { IncomingMessage } from 'node:http';
import { Messages } from '@svc/contracts';
import { declaredContentLength, payloadTooLarge, stopReading } from './body-limit';
import { HttpError } from './http-error';

export interface ReadJsonBodyOptions {
  /** Largest accepted body in bytes; one more byte is a 413. */
  limitBytes: number;
  /** `hint` of the 413 body (`BodyLimitHints.batch` or `.generic`). */
  hint: string;
}

export interface ReadBoundedOptions extends ReadJsonBodyOptions {
  /**
   * Looks at the body's first `bytes` (or the whole body, when shorter) before
   * the rest is read: reading waits for `check`, and stops for good when it
   * throws (its error is the answer), so a body can be refused from its start.
   */
  start?: { bytes: number; check: (start: Buffer) => Promise<void> };
}

/**
 * Reads and parses a JSON request body. Route handlers call it after
 * authentication, which is why no body-parsing middleware runs globally: an
 * unauthenticated caller must not make the server read (or buffer) its body.
 *
 * Errors (all HttpError): 400 `contentTypeNotJson` when the media type is not
 * `application/json`; 413 as soon as the byte count passes the limit (declared or
 * streamed; the rest of the body is never read); 400 `emptyBody` for zero bytes or
 * only whitespace; 400 `invalidJson` for anything unparsable (invalid UTF-8
 * included) or a body cut short by the client.
 */
export async function readJsonBody(req: IncomingMessage, options: ReadJsonBodyOptions): Promise<unknown> {
  if (!isJsonContentType(req.headers['content-type'])) {
    throw new HttpError(400, Messages.contentTypeNotJson);
  }
  const declared = declaredContentLength(req);
  if (declared !== undefined && declared > options.limitBytes) {
    stopReading(req);
    throw payloadTooLarge(options.limitBytes, options.hint);
  }
  return parseJsonChunks(await readBoundedChunks(req, options));
}

/** `application/json`, any parameters (`; charset=utf-8`), any letter case. */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const mediaType = header.split(';', 1)[0] ?? '';
  return mediaType.trim().toLowerCase() === 'application/json';
}

/** The body's bytes, refused with the 413 as soon as they pass the limit (for routes that read other than JSON's Content-Type). */
export async function readBounded(req: IncomingMessage, options: ReadBoundedOptions): Promise<Buffer> {
  const chunks = await readBoundedChunks(req, options);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/** The body's chunks as they arrived, bounded as readBounded says. */
function readBoundedChunks(req: IncomingMessage, { limitBytes, hint, start }: ReadBoundedOptions): Promise<Buffer[]> {
  if (req.readableEnded) {
    // Someone (a body-parser, an earlier call) already consumed the stream;
    // waiting for 'end' would hang the request forever.
    return Promise.reject(new Error('readJsonBody: request body was already consumed'));
  }
  return new Promise<Buffer[]>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    /** The start was looked at (or there is nothing to look at). */
    let started = start === undefined;
    let settled = false;

    const finish = (settle: () => void): void => {
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAborted);
      req.off('close', onAborted);
      settle();
    };
    const onData = (chunk: Buffer | string): void => {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      received += bytes.length;
      if (received > limitBytes) {
        // Drop what we hold and stop reading right here: nothing past the limit
        // is buffered, and the response still reaches a client that keeps sending.
        chunks.length = 0;
        finish(() => reject(payloadTooLarge(limitBytes, hint)));
        stopReading(req);
        return;
      }
      chunks.push(bytes);
      if (!started && received >= start!.bytes) checkStart();
    };
    // The start's check, once: the stream waits (paused) for it; a refusal ends the read.
    const checkStart = (then?: () => void): void => {
      started = true;
      req.pause();
      start!.check(Buffer.concat(chunks)).then(
        () => {
          if (settled) return;
          if (then) then();
          else req.resume();
        },
        (err: unknown) => {
          if (settled) return;
          chunks.length = 0;
          finish(() => reject(err));
          if (!req.readableEnded) stopReading(req);
        },
      );
    };
    const onEnd = (): void => {
      if (started) {
        finish(() => resolve(chunks));
        return;
      }
      // The whole body is in: the request closing while its start is checked is not an abort.
      req.off('close', onAborted);
      checkStart(() => finish(() => resolve(chunks)));
    };
    // The client went away mid-body: what arrived is not a JSON document. Nobody is
    // left to read the answer, but the handler must still settle.
    const onAborted = (): void => finish(() => reject(new HttpError(400, Messages.invalidJson)));

    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onAborted);
    req.once('close', onAborted);
  });
}

/** JSON whitespace (RFC 8259): space, tab, line feed, carriage return. */
function isBlank(chunks: readonly Buffer[]): boolean {
  return chunks.every((raw) => raw.every((byte) => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d));
}

/** A body's bytes as JSON: 400 `emptyBody` for blank, 400 `invalidJson` for anything unparsable. */
export function parseJson(raw: Buffer): unknown {
  return parseJsonChunks([raw]);
}

/**
 * parseJson over the chunks a body arrived in, decoded one by one (a
 * character split between two chunks included) rather than copied into one
 * Buffer first: a large body then costs no second copy outside V8's heap,
 * whose growth is what sets off most young-generation GCs of a busy gateway.
 */
function parseJsonChunks(chunks: readonly Buffer[]): unknown {
  if (isBlank(chunks)) throw new HttpError(400, Messages.emptyBody);
  try {
    // JSON is UTF-8 (RFC 8259) whatever the charset parameter says; `fatal` turns
    // malformed bytes into an error instead of silent U+FFFD. A BOM is skipped.
    const decoder = new TextDecoder('utf-8', { fatal: true });
    let text = '';
    for (let i = 0; i < chunks.length; i++) text += decoder.decode(chunks[i], { stream: i < chunks.length - 1 });
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, Messages.invalidJson);
  }
}
