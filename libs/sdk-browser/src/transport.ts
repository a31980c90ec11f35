import type { WindowLike } from './dom';
import { isObject } from './util';

export type SendOutcome =
  | { ok: true; status: number; body: unknown; quota: string | null }
  | { ok: false; retry: boolean; status: number; message: string; body?: unknown };

/** First retry waits about this long; each further one doubles it. */
export const BACKOFF_BASE_MS = 1000;
export const BACKOFF_CAP_MS = 30_000;

/**
 * POSTs a JSON body with the write key. 2xx is success; any 4xx (429 included)
 * is permanent; 5xx, other statuses and network errors are retryable.
 */
export async function postJSON(win: WindowLike, url: string, writeKey: string, body: string, keepalive: boolean): Promise<SendOutcome> {
  if (typeof win.fetch !== 'function') return { ok: false, retry: false, status: 0, message: 'fetch is not available' };
  let status: number;
  let text = '';
  let quota: string | null = null;
  try {
    const res = await win.fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${writeKey}` },
      body,
      keepalive,
      credentials: 'omit',
    });
    status = res.status;
    quota = res.headers?.get('X-SVC-Quota-Status') ?? null;
    text = await res.text();
  } catch (err) {
    return { ok: false, retry: true, status: 0, message: `network error: ${(err as Error)?.message ?? String(err)}` };
  }
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  if (status >= 200 && status < 300) return { ok: true, status, body: parsed, quota };
  const message = isObject(parsed) && typeof parsed.error === 'string' ? parsed.error : `HTTP ${status}`;
  return { ok: false, retry: status < 400 || status >= 500, status, message, body: parsed };
}

/** Delay before retry number `attempt` (1-based): exponential from 1 s, capped at 30 s, with equal jitter. */
export function backoffDelay(attempt: number, random: () => number): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempt - 1));
  return ceiling / 2 + (random() * ceiling) / 2;
}
