import { isRecord, outcomeByStatus, rawBodyText, retryOutcome, type PlatformResponse } from './http';
import type { DeliveryOutcome } from './types';

/**
 * Reading Graph API answers. Errors come as `{error: {message, code,
 * error_subcode, is_transient, error_user_title, error_user_msg}}`, and Meta
 * reports throttling with a 400 or 403 and a code, so the code is read before
 * the status.
 */

/** Graph API throttling (4 app, 17 user, 32 page, 341 app limit, 613 custom, 80004 ad account): wait and retry. */
export const META_RATE_LIMIT_CODES: ReadonlySet<number> = new Set([4, 17, 32, 341, 613, 80004]);

/** 1 "API Unknown" and 2 "API Service": Meta's documented advice is wait and retry. */
const META_TEMPORARY_CODES: ReadonlySet<number> = new Set([1, 2]);

/**
 * "Click ID Incorrectly Formatted" (code 100). Our fbc wrapper is fixed, so
 * the refusal is of the fbclid itself: no conversion for it can be sent.
 * Meta has no expired-click refusal: it accepts an old fbc and simply does
 * not attribute it.
 */
export const META_MALFORMED_FBC_SUBCODE = 2804001;

interface GraphError {
  code: number | undefined;
  subcode: number | undefined;
  isTransient: boolean;
  message: string;
}

function graphError(body: unknown): GraphError | undefined {
  const error = isRecord(body) ? body.error : undefined;
  if (!isRecord(error)) return undefined;
  const code = typeof error.code === 'number' ? error.code : undefined;
  const subcode = typeof error.error_subcode === 'number' ? error.error_subcode : undefined;
  const detail = [error.error_user_title, error.error_user_msg ?? error.message].filter((part): part is string => typeof part === 'string' && part !== '');
  const tag = code === undefined ? '' : `(#${code}${subcode === undefined ? '' : `/${subcode}`}) `;
  return { code, subcode, isTransient: error.is_transient === true, message: `${tag}${detail.join(': ')}` };
}

export function eventsOutcome(response: PlatformResponse): DeliveryOutcome {
  const { status, body } = response;
  if (status >= 200 && status < 300) return { kind: 'sent', status };
  const error = graphError(body);
  if (!error) return outcomeByStatus(response, rawBodyText(status, body));
  const { code } = error;
  if (error.isTransient || (code !== undefined && (META_RATE_LIMIT_CODES.has(code) || META_TEMPORARY_CODES.has(code)))) {
    return retryOutcome(status, error.message, response.retryAfterMs);
  }
  if (error.subcode === META_MALFORMED_FBC_SUBCODE) return { kind: 'failed', status, error: error.message, clickUnusable: true };
  return outcomeByStatus(response, error.message);
}
