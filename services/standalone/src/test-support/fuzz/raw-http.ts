import { connect } from 'node:net';

export interface RawRequest {
  method: string;
  /** The request target exactly as written on the wire: may hold bytes no HTTP client would send. */
  target: Buffer;
  headers: ReadonlyArray<[string, string]>;
  body?: Buffer;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One HTTP/1.1 request written byte for byte on its own connection. Node's
 * clients refuse to send what a fuzzer must (invalid UTF-8 and control bytes
 * in the path, a lone surrogate's raw encoding), so this writes the request
 * line itself and reads the response until the server closes the connection.
 */
export function rawRequest(port: number, req: RawRequest, timeoutMs = 30_000): Promise<RawResponse> {
  const head = Buffer.concat([
    Buffer.from(`${req.method} `, 'latin1'),
    req.target,
    Buffer.from(
      ` HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n${req.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}` +
        `Content-Length: ${req.body?.length ?? 0}\r\n\r\n`,
      'utf8',
    ),
  ]);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.write(head);
      if (req.body?.length) socket.write(req.body);
    });
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no complete answer within ${timeoutMs} ms`)));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      try {
        resolve(parseResponse(Buffer.concat(chunks)));
      } catch (err) {
        reject(err as Error);
      }
    });
  });
}

function parseResponse(raw: Buffer): RawResponse {
  const split = raw.indexOf('\r\n\r\n');
  if (split < 0) throw new Error(`no HTTP response: ${JSON.stringify(raw.subarray(0, 200).toString('latin1'))}`);
  const [statusLine = '', ...lines] = raw.subarray(0, split).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  if (!Number.isInteger(status)) throw new Error(`bad status line: ${statusLine}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = raw.subarray(split + 4);
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') body = dechunk(body);
  return { status, headers, body: body.toString('utf8') };
}

function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf('\r\n', at);
    if (eol < 0) break;
    const size = parseInt(data.subarray(at, eol).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
