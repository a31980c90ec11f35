import type { ErrorCode } from '@svc/contracts';

export interface HttpErrorOptions {
  /** Machine-readable `code` of the envelope; the spec allows additive codes, hence `string`. */
  code?: ErrorCode | (string & {});
  /** Extra envelope fields, e.g. `limit_bytes` and `hint` on a 413, `upgrade_url` on a quota 429. */
  body?: Record<string, unknown>;
  /** Extra response headers, e.g. `Retry-After`, `Allow`. */
  headers?: Record<string, string>;
  /**
   * Whether the message, code and extra fields may be shown to the client. Default
   * true: callers pass catalogue strings. When false the client sees only
   * `Messages.internalError` (status kept if 5xx, else 500; `headers` are still
   * sent); use it for errors whose message is meant for logs only.
   */
  expose?: boolean;
  /**
   * Render the body without `success: false`. Exists for the spec's per-organization
   * 429, whose body carries only `error`.
   */
  omitSuccessField?: boolean;
  cause?: unknown;
}

/** Envelope keys the error handler owns; extra body fields cannot override them. */
const RESERVED_BODY_KEYS = new Set(['success', 'error', 'code']);

/**
 * An error meant to reach the client as the spec's envelope
 * `{ success: false, error, code?, ...extra }`. Anything thrown that is not an
 * HttpError becomes a bare 500, so raw driver or framework text never leaks.
 */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  readonly status: number;
  readonly code: string | undefined;
  readonly body: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, string>>;
  readonly expose: boolean;
  readonly omitSuccessField: boolean;

  constructor(status: number, message: string, options: HttpErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    if (!Number.isInteger(status) || status < 400 || status > 599) {
      throw new RangeError(`HttpError status must be an integer in 400..599, got ${status}`);
    }
    this.status = status;
    this.code = options.code;
    this.body = Object.fromEntries(
      Object.entries(options.body ?? {}).filter(([key]) => !RESERVED_BODY_KEYS.has(key)),
    );
    this.headers = { ...options.headers };
    this.expose = options.expose ?? true;
    this.omitSuccessField = options.omitSuccessField ?? false;
  }
}

export function isHttpError(value: unknown): value is HttpError {
  return value instanceof HttpError;
}
