import type { DeliveryOutcome } from './types';

export type Fetch = typeof fetch;

/** A platform call that has not answered by then is retried later rather than holding a worker. */
export const DEFAULT_TIMEOUT_MS = 10_000;

export interface HttpOptions {
  fetch: Fetch;
  timeoutMs: number;
}

export interface PlatformResponse {
  status: number;
  /** From `Retry-After`, when the platform sent one. */
  retryAfterMs?: number;
  /** Parsed JSON, or the raw text when the body is not JSON. */
  body: unknown;
}

export type PostResult =
  | { kind: 'response'; response: PlatformResponse }
  /** No HTTP answer at all: refused, reset, DNS, TLS or timeout. */
  | { kind: 'unreachable'; error: string };

export async function post(
  url: string,
  request: { headers: Record<string, string>; body: string },
  options: HttpOptions,
): Promise<PostResult> {
  try {
    const res = await options.fetch(url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
      signal: AbortSignal.timeout(options.timeoutMs),
      // A redirect would replay credentials (Meta's token is in the body) to
      // another URL; none of these APIs redirects, so one is reported instead.
      redirect: 'manual',
    });
    const text = await res.text();
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), Date.now());
    return {
      kind: 'response',
      response: { status: res.status, body: parseBody(text), ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
    };
  } catch (err) {
    return { kind: 'unreachable', error: transportErrorText(err, options.timeoutMs) };
  }
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(header: string | null, nowMs: number): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // Every HTTP-date form opens with the day name; Date.parse alone would take "-5" as a year.
  const at = /^[A-Za-z]{3}/.test(value) ? Date.parse(value) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

interface ErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  cause?: unknown;
}

// Duck-typed, not instanceof: fetch's errors come from Node's own realm, which
// is not the caller's under a sandboxed runner (jest).
function asErrorLike(value: unknown): ErrorLike {
  return typeof value === 'object' && value !== null ? value : {};
}

function transportErrorText(err: unknown, timeoutMs: number): string {
  const error = asErrorLike(err);
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  // fetch reports every transport failure as "fetch failed"; the reason is in `cause`.
  const cause = asErrorLike(error.cause);
  const reason = [cause.code, cause.message, error.message].find((part) => typeof part === 'string' && part !== '');
  return `network error: ${typeof reason === 'string' ? reason : String(err)}`;
}

export function retryOutcome(status: number | null, error: string, retryAfterMs?: number): DeliveryOutcome {
  return retryAfterMs === undefined ? { kind: 'retry', status, error } : { kind: 'retry', status, error, retryAfterMs };
}

/**
 * The status rules every platform shares: 2xx sent; 429 and 5xx retried
 * (honouring Retry-After); any other status is a refusal that the same
 * request would meet again, so it fails with the platform's own reason.
 */
export function outcomeByStatus(response: PlatformResponse, platformMessage: string): DeliveryOutcome {
  const { status } = response;
  if (status >= 200 && status < 300) return { kind: 'sent', status };
  if (status === 429 || status >= 500) return retryOutcome(status, platformMessage, response.retryAfterMs);
  return { kind: 'failed', status, error: platformMessage, clickUnusable: false };
}

/** A body with no error structure the platform module recognises, as text. */
export function rawBodyText(status: number, body: unknown): string {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return text ? `HTTP ${status}: ${text}` : `HTTP ${status}`;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
