import { isRecord, outcomeByStatus, rawBodyText, retryOutcome, type PlatformResponse } from './http';
import type { DeliveryOutcome } from './types';

/**
 * Reading Google Ads API answers. Errors arrive as a google.rpc.Status
 * (`{code, message, details}`) whose details hold a GoogleAdsFailure:
 * `{errors: [{errorCode: {<category>: <ENUM>}, message}]}`; as the HTTP error
 * body's `error`, or, with partialFailure, as a 200's `partialFailureError`.
 */

/**
 * ConversionUploadError values that condemn the click itself, whichever
 * conversion is uploaded for it: it cannot be decoded (UNPARSEABLE_*), it is
 * outside the conversion window (EXPIRED_EVENT), or Google cannot tie it to an
 * ad click (EVENT_NOT_FOUND; CLICK_NOT_FOUND, which Google words for
 * user-identifier matching, but every upload here carries a click ID, so it
 * means that click). The click is then marked is_exhausted.
 */
export const CLICK_UNUSABLE_ERRORS: ReadonlySet<string> = new Set([
  'UNPARSEABLE_GCLID',
  'UNPARSEABLE_GBRAID',
  'UNPARSEABLE_WBRAID',
  'EXPIRED_EVENT',
  'EVENT_NOT_FOUND',
  'CLICK_NOT_FOUND',
]);

/**
 * Refusals Google itself says to repeat after 6 hours: the click (or the
 * conversion action) is too new to attribute yet. They are retried, not failed,
 * and certainly not click-unusable: the same upload succeeds later.
 *
 * CONVERSION_PRECEDES_EVENT is deliberately absent: a conversion timed before
 * its click is wrong data that no retry fixes, so it fails; the click stays
 * usable, because a later conversion from it is legitimate.
 */
const RETRY_LATER_ERRORS: ReadonlySet<string> = new Set(['TOO_RECENT_EVENT', 'TOO_RECENT_CONVERSION_ACTION']);

/**
 * The queue holds one row per (organisation, platform, order id), so Google
 * knowing the order already means an earlier attempt of ours was recorded
 * although its answer was lost (a timeout), or the order came through another
 * path: either way it is delivered, and at most once.
 */
const ALREADY_DELIVERED_ERRORS: ReadonlySet<string> = new Set(['ORDER_ID_ALREADY_IN_USE']);
export const TOO_RECENT_RETRY_MS = 6 * 60 * 60 * 1000;

interface GoogleAdsError {
  code: string | undefined;
  message: string | undefined;
  retryDelayMs: number | undefined;
}

function googleAdsErrors(status: unknown): GoogleAdsError[] {
  if (!isRecord(status) || !Array.isArray(status.details)) return [];
  return status.details.flatMap((detail: unknown) =>
    isRecord(detail) && Array.isArray(detail.errors) ? detail.errors.filter(isRecord).map(toGoogleAdsError) : [],
  );
}

function toGoogleAdsError(error: Record<string, unknown>): GoogleAdsError {
  const codes = isRecord(error.errorCode) ? Object.values(error.errorCode).filter((v): v is string => typeof v === 'string') : [];
  return {
    code: codes[0],
    message: typeof error.message === 'string' ? error.message : undefined,
    retryDelayMs: quotaRetryDelayMs(error.details),
  };
}

/** QuotaErrorDetails.retryDelay, a protobuf Duration in JSON: "30s", "1.5s". */
function quotaRetryDelayMs(details: unknown): number | undefined {
  if (!isRecord(details) || !isRecord(details.quotaErrorDetails)) return undefined;
  const delay = details.quotaErrorDetails.retryDelay;
  const match = typeof delay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(delay) : null;
  return match ? Math.round(Number(match[1]) * 1000) : undefined;
}

function describe(errors: GoogleAdsError[], status: unknown): string | undefined {
  const described = errors
    .map((e) => [e.code, e.message].filter(Boolean).join(': '))
    .filter((text) => text !== '');
  if (described.length > 0) return described.join('; ');
  return isRecord(status) && typeof status.message === 'string' ? status.message : undefined;
}

/** The outcome of an uploadClickConversions call that got an HTTP answer. */
export function uploadOutcome(response: PlatformResponse): DeliveryOutcome {
  const { status, body } = response;
  if (status >= 200 && status < 300) {
    const partialFailure = isRecord(body) ? body.partialFailureError : undefined;
    if (isRecord(partialFailure) && Object.keys(partialFailure).length > 0) return partialFailureOutcome(status, partialFailure);
    return { kind: 'sent', status };
  }
  const rpcStatus = isRecord(body) ? body.error : undefined;
  const errors = googleAdsErrors(rpcStatus);
  const message = describe(errors, rpcStatus) ?? rawBodyText(status, body);
  // Google rarely sends Retry-After; a quota error states its own delay.
  const retryAfterMs = response.retryAfterMs ?? errors.find((e) => e.retryDelayMs !== undefined)?.retryDelayMs;
  return outcomeByStatus(retryAfterMs === undefined ? { status, body } : { status, body, retryAfterMs }, message);
}

function partialFailureOutcome(status: number, partialFailure: Record<string, unknown>): DeliveryOutcome {
  const errors = googleAdsErrors(partialFailure);
  const message = describe(errors, partialFailure) ?? rawBodyText(status, partialFailure);
  const codes = errors.map((e) => e.code);
  const all = (set: ReadonlySet<string>) => codes.length > 0 && codes.every((code) => code !== undefined && set.has(code));
  if (all(ALREADY_DELIVERED_ERRORS)) return { kind: 'sent', status };
  if (all(RETRY_LATER_ERRORS)) {
    return retryOutcome(status, message, TOO_RECENT_RETRY_MS);
  }
  const clickUnusable = codes.some((code) => code !== undefined && CLICK_UNUSABLE_ERRORS.has(code));
  return { kind: 'failed', status, error: message, clickUnusable };
}
