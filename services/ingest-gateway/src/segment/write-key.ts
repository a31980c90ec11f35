import { Messages } from '@svc/contracts';
import { HttpError } from '@svc/runtime';
import { KeyRequirements, authenticate, parseAuthorization, type FailedAuthThrottle, type KeyVerifier, type VerifiedKey } from '@svc/accounts';

/**
 * Where Segment's and RudderStack's libraries put the write key: as the
 * user of HTTP Basic auth with an empty password (`Basic base64("<key>:")`),
 * or as `writeKey` in the JSON body. A `Bearer` header, as /v1-batch takes
 * it, works too.
 */
export type WriteKeySource = { kind: 'header'; key: string } | { kind: 'body' };

/**
 * The key an Authorization header carries; `body` when there is no header
 * (the key must then be in the body). 401 for a header that names no key.
 */
export function writeKeyFromHeader(header: string | undefined): WriteKeySource {
  if (header === undefined || header.trim() === '') return { kind: 'body' };
  const basic = /^Basic\s+(\S*)\s*$/i.exec(header.trim());
  if (basic) {
    const credentials = decodeBase64(basic[1] ?? '');
    if (credentials === undefined) throw new HttpError(401, Messages.invalidWriteKeyAuthorizationFormat);
    // The password is ignored: the libraries send none, and the key alone is the credential.
    const user = credentials.split(':', 1)[0] ?? '';
    if (user.trim() === '') throw new HttpError(401, Messages.emptyApiKey);
    return { kind: 'header', key: user.trim() };
  }
  const bearer = parseAuthorization(header);
  if (bearer.ok) return { kind: 'header', key: bearer.key };
  if (bearer.problem === 'empty') throw new HttpError(401, Messages.emptyApiKey);
  throw new HttpError(401, Messages.invalidWriteKeyAuthorizationFormat);
}

/** `writeKey` of a parsed body; 401 when it has none. */
export function writeKeyFromBody(body: unknown): string {
  const key = typeof body === 'object' && body !== null ? (body as { writeKey?: unknown }).writeKey : undefined;
  if (key === undefined || key === null) throw new HttpError(401, Messages.writeKeyMissing);
  if (typeof key !== 'string') throw new HttpError(401, Messages.invalidApiKey);
  if (key.trim() === '') throw new HttpError(401, Messages.emptyApiKey);
  return key.trim();
}

/**
 * The same checks as /v1-batch (key known and not revoked, write or admin,
 * IP and Origin allowlists), by handing the key to the one authenticate().
 */
export function authenticateWriteKey(
  key: string,
  request: { headers: Record<string, string | string[] | undefined>; clientIp: string },
  verifier: KeyVerifier,
  options: { fresh?: boolean; throttle?: FailedAuthThrottle } = {},
): Promise<VerifiedKey> {
  return authenticate({ headers: { ...request.headers, authorization: `Bearer ${key}` }, clientIp: request.clientIp }, verifier, KeyRequirements.write, options);
}

/** Strict base64 (standard alphabet, padding optional) as UTF-8 text; undefined when it is not. */
function decodeBase64(text: string): string | undefined {
  if (text === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(text, 'base64'));
  } catch {
    return undefined;
  }
}
