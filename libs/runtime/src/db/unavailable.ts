/**
 * The one answer to "is the database (or the network to it) unable to serve
 * us right now?", as opposed to "this request or this data is wrong". The
 * Postgres-backed log and the identity resolver both ask it: unavailable
 * means back off and try the same thing again later, never blame the input.
 */

/** Socket errors of Node's net and dns modules: nothing answered. */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * SQLSTATE classes and codes that mean the server cannot serve us now:
 * 08 connection exception; 53 insufficient resources (too many
 * connections, out of memory or disk); 57P01-57P04 shutting down, starting
 * up; 57014 statement timeout or cancel; 58 system error.
 */
const UNAVAILABLE_CLASSES = /^(08|53|58)/;
const UNAVAILABLE_SQLSTATES: ReadonlySet<string> = new Set(['57P01', '57P02', '57P03', '57P04', '57014']);

/**
 * SQLSTATE class 42 and 3F000: the statement does not fit the database (a
 * schema, table or column missing, or a statement that is wrong). Not
 * transient, so no 503; but no input is to blame either: the database is not
 * migrated yet, or the code has a bug.
 */
const MISMATCH_CLASS = /^42/;
const MISMATCH_SQLSTATES: ReadonlySet<string> = new Set(['3F000']);

/** Whether `err` says the statement does not fit the database (see MISMATCH_CLASS), following causes. */
export function isStatementMismatch(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 4) return false;
  const { code, cause } = err as { code?: unknown; cause?: unknown };
  if (typeof code === 'string' && code.length === 5 && (MISMATCH_CLASS.test(code) || MISMATCH_SQLSTATES.has(code))) return true;
  return isStatementMismatch(cause, depth + 1);
}

/** What pg and knex say when the connection or the pool failed, without a code. */
const UNAVAILABLE_MESSAGES = /Connection terminated|connection error|not queryable|Timeout acquiring a connection|Client was closed|pool is probably full/i;

/**
 * Whether `err` means the database cannot be reached or cannot serve us now.
 * Duck-typed (errors of node's net module may come from another realm, as
 * under jest) and following `cause` and AggregateError's `errors` (Node
 * wraps failed attempts to connect to several addresses in one).
 */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 4) return false;
  const { code, name, message, cause, errors } = err as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === 'string' && (NETWORK_ERROR_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || (code.length === 5 && UNAVAILABLE_CLASSES.test(code)))) {
    return true;
  }
  if (name === 'KnexTimeoutError' || (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message))) return true;
  const nested = Array.isArray(errors) ? (errors as unknown[]) : [];
  return [cause, ...nested].some((e) => isDatabaseUnavailable(e, depth + 1));
}
