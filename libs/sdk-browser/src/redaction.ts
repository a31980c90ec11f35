import { CLICK_IDS } from './campaign';
import { decode } from './util';

/** Parameter names whose values never leave the browser. Matching ignores case, `-` vs `_` and `user[...]` wrappers. */
export const SENSITIVE_PARAMS: readonly string[] = [
  'token', 'access_token', 'refresh_token', 'id_token', 'auth', 'auth_token', 'authorization', 'bearer', 'jwt',
  'password', 'passwd', 'pwd', 'pass', 'passcode', 'pin', 'secret', 'client_secret', 'otp', 'code', 'nonce', 'state',
  'email', 'mail', 'phone', 'tel', 'mobile', 'api_key', 'apikey', 'key', 'session', 'session_id', 'sessionid', 'sid',
  'signature', 'sig', 'credential', 'ssn', 'card', 'card_number', 'cc', 'cc_number', 'cvv', 'cvc',
];

/** Names containing one of these are sensitive too (`csrf_token`, `user_password`, `x-amz-signature`...). */
const SENSITIVE_PARTS = /token|passw|secret|api_?key|signature|credential|email/;

const EMAIL_VALUE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export const REDACTED = '<redacted>';

export type Redactor = (url: string) => string;

/**
 * Builds the redactor for one client: it replaces, in the query and in the
 * fragment of a URL (or of a bare `?search` / `#hash`), the value of every
 * sensitive parameter and every value that is an email address with
 * `<redacted>`. utm_* parameters and click IDs are always kept.
 */
export function createRedactor(extra: readonly string[] = []): Redactor {
  const names = new Set([...SENSITIVE_PARAMS, ...extra.map((k) => normaliseKey(k))]);
  const isSensitive = (key: string): boolean => {
    const inner = /\[([^\]]*)\]$/.exec(key)?.[1];
    return names.has(key) || (inner !== undefined && names.has(inner)) || SENSITIVE_PARTS.test(key);
  };
  const params = (list: string): string =>
    list
      .split('&')
      .map((part) => {
        const eq = part.indexOf('=');
        if (eq <= 0 || eq === part.length - 1) return part;
        const key = normaliseKey(decode(part.slice(0, eq)));
        if (key.startsWith('utm_') || CLICK_IDS.includes(key)) return part;
        return isSensitive(key) || EMAIL_VALUE.test(decode(part.slice(eq + 1)).trim()) ? `${part.slice(0, eq)}=${REDACTED}` : part;
      })
      .join('&');
  return (url: string): string => {
    if (!url) return url;
    const hashAt = url.indexOf('#');
    const beforeHash = hashAt < 0 ? url : url.slice(0, hashAt);
    const queryAt = beforeHash.indexOf('?');
    let out = queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt + 1) + params(beforeHash.slice(queryAt + 1));
    if (hashAt >= 0) {
      const fragment = url.slice(hashAt + 1);
      const fq = fragment.indexOf('?');
      // `#/route?token=x` (hash router) or `#access_token=x&...` (OAuth implicit flow)
      out += '#' + (fq >= 0 ? fragment.slice(0, fq + 1) + params(fragment.slice(fq + 1)) : fragment.includes('=') ? params(fragment) : fragment);
    }
    return out;
  };
}

function normaliseKey(key: string): string {
  return key.trim().toLowerCase().replace(/-/g, '_');
}
