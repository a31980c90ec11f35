import type { IncomingHttpHeaders } from 'node:http';
import ipaddr from 'ipaddr.js';
import { ErrorCodes, Messages, type RequiredKeyType } from '@svc/contracts';
import { HttpError } from '@svc/runtime';
import { parseAuthorization, type KeyType } from '../accounts/api-keys';
import type { VerifiedKey } from '../accounts/store';
import type { FailedAuthThrottle } from './failed-auth-throttle';

/** The one thing authentication needs from the accounts store (or a KeyCache before it); tests pass a double. */
export interface KeyVerifier {
  /** `fresh`: read from the database, whatever is held. */
  verifyApiKey(key: string, options?: { fresh?: boolean }): Promise<VerifiedKey | undefined>;
  /** The database has just confirmed a key this verifier served `unconfirmed` (a cache's bookkeeping). */
  confirmed?(key: VerifiedKey): void;
  /** Whether this verifier holds `key` as verified, without looking anything up (a cache). */
  holds?(key: string): boolean;
}

/** Which key types an operation accepts, and how a 403 names them. */
export interface KeyRequirement {
  allowed: readonly KeyType[];
  label: RequiredKeyType;
}

export const KeyRequirements = {
  write: { allowed: ['write', 'admin'], label: 'write or admin' },
  read: { allowed: ['read', 'admin'], label: 'read or admin' },
  admin: { allowed: ['admin'], label: 'admin' },
} as const satisfies Record<string, KeyRequirement>;

export interface AuthRequest {
  headers: IncomingHttpHeaders;
  /** The client's address as the edge resolved it (see clientIp). */
  clientIp: string;
}

const PARSE_FAILURES = {
  missing: Messages.missingAuthorization,
  format: Messages.invalidAuthorizationFormat,
  empty: Messages.emptyApiKey,
} as const;

/**
 * Authenticates a request: 401 for a missing, malformed, empty, unknown or
 * revoked key; 500 `Authentication failed` when verification itself throws;
 * 403 for a key of the wrong type, or a client outside the key's IP or Origin
 * allowlist. Key types are not hierarchical, except that admin satisfies all.
 * A key a cache served is read again before it is refused (it may have
 * changed since); one it lets through stays `unconfirmed` for the caller.
 * `fresh` reads the key from the database whatever is held. With a
 * `throttle`, every 401 counts against the client's address, and an address
 * past its count gets the per-IP 429 before its key is looked up (unless the
 * verifier already holds the key as verified).
 */
export async function authenticate(
  req: AuthRequest,
  verifier: KeyVerifier,
  requirement: KeyRequirement,
  options: { fresh?: boolean; throttle?: FailedAuthThrottle } = {},
): Promise<VerifiedKey> {
  const { throttle } = options;
  const parsed = parseAuthorization(req.headers.authorization);
  if (!parsed.ok) {
    throttle?.failed(req.clientIp);
    throw new HttpError(401, PARSE_FAILURES[parsed.problem]);
  }
  if (throttle && !verifier.holds?.(parsed.key)) {
    const refusal = throttle.refusal(req.clientIp);
    if (refusal) throw refusal;
  }

  const verify = async (fresh: boolean) => {
    try {
      return await verifier.verifyApiKey(parsed.key, { fresh });
    } catch (err) {
      throw new HttpError(500, Messages.authenticationFailed, { cause: err });
    }
  };
  let key = await verify(options.fresh === true);
  let refusal = refusalOf(key, req, requirement);
  if (refusal && key?.unconfirmed) {
    key = await verify(true);
    refusal = refusalOf(key, req, requirement);
  }
  if (refusal) {
    if (!key) throttle?.failed(req.clientIp);
    throw refusal;
  }
  return key!;
}

/** Why `key` may not make this request, or undefined when it may. */
function refusalOf(key: VerifiedKey | undefined, req: AuthRequest, requirement: KeyRequirement): HttpError | undefined {
  if (!key) return new HttpError(401, Messages.invalidApiKey);
  if (!requirement.allowed.includes(key.type)) {
    return new HttpError(403, Messages.insufficientPermissions(requirement.label));
  }
  if (key.ipAllowlist.length > 0 && !ipAllowed(req.clientIp, key.ipAllowlist)) {
    return new HttpError(403, Messages.ipNotAllowed, { code: ErrorCodes.ipNotAllowed });
  }
  // A request without Origin (server to server) is not a browser on another
  // site; the allowlist exists to stop a browser key being used from one.
  const origin = req.headers.origin;
  if (key.originAllowlist.length > 0 && origin !== undefined && !key.originAllowlist.includes(originOf(origin))) {
    return new HttpError(403, Messages.originNotAllowed, { code: ErrorCodes.originNotAllowed });
  }
  return undefined;
}

function ipAllowed(ip: string, allowlist: readonly string[]): boolean {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(ip);
  } catch {
    return false;
  }
  return allowlist.some((cidr) => {
    try {
      const range = ipaddr.parseCIDR(cidr);
      return addr.kind() === range[0].kind() && addr.match(range);
    } catch {
      return false;
    }
  });
}

/** Origins compare in their canonical form (lower-case host, no default port). */
function originOf(value: string): string {
  try {
    return new URL(value).origin;
  } catch {
    return value;
  }
}
