import { UnavailableError, isDatabaseUnavailable, isStatementMismatch, type Db } from '@svc/runtime';
import { RawLogKeyError } from './privacy/subject-keys';

/**
 * Which failures are worth trying again, and how. Three kinds:
 * - conflict: deadlock, serialization failure, a lock not available, or a
 *   concurrent writer that stored one of our events first; the transaction
 *   is run again at once (jittered, bounded).
 * - unavailable: the database cannot serve us now (connection lost, shutting
 *   down, out of connections, statement timeout, schema not migrated yet);
 *   the batch is handed back to the bus uncommitted and comes again later.
 * - anything else is about the data: the batch is split to find the event
 *   that fails, and only that one is dead-lettered.
 */
export type FailureKind = 'conflict' | 'unavailable' | 'data';

/** Thrown when a concurrent transaction stored an event this one was about to store. */
export class ConcurrentWriteError extends Error {
  constructor(message = 'a concurrent transaction stored events of this batch first') {
    super(message);
    this.name = 'ConcurrentWriteError';
  }
}

/** The transaction kept conflicting; the batch should come again later. */
export class RetriesExhaustedError extends UnavailableError {
  constructor(attempts: number, options: { cause: unknown }) {
    super(`transaction still conflicting after ${attempts} attempts`, options);
  }
}

// 23505: every insert here is either on-conflict or keyed by an id derived from a signal the
// batch holds the lock of, so a unique violation means a concurrent writer, not bad data.
const CONFLICT_CODES = new Set(['40001', '40P01', '55P03', '23505']);

/** Duck-typed (errors may come from another realm under jest), following causes. */
export function classifyFailure(err: unknown, depth = 0): FailureKind {
  if (typeof err !== 'object' || err === null || depth > 4) return 'data';
  if (err instanceof ConcurrentWriteError) return 'conflict';
  if (err instanceof RetriesExhaustedError) return 'unavailable';
  // The raw log's keys cannot be unwrapped (no master key for them): the deployment's fault, never an event's.
  if (err instanceof RawLogKeyError) return 'unavailable';
  const { code, name, cause } = err as { code?: unknown; name?: unknown; cause?: unknown };
  if (typeof code === 'string' && CONFLICT_CODES.has(code)) return 'conflict';
  // The database's unavailability is runtime's one answer (the Postgres-backed log asks it too); the log's is the bus's.
  // A statement that does not fit the database (not migrated yet, or a bug) is no event's fault either: retry later.
  if (isDatabaseUnavailable(err) || isStatementMismatch(err) || name === 'BusUnavailableError' || name === 'UnavailableError') return 'unavailable';
  return cause === undefined ? 'data' : classifyFailure(cause, depth + 1);
}

export interface TransactionRetryOptions {
  /** Attempts in all (default 8). */
  attempts?: number;
  /** First back-off; doubles per attempt, jittered, capped at 1 s (default 10 ms). */
  baseDelayMs?: number;
  onRetry?: (attempt: number, err: unknown) => void;
}

export const jittered = (ms: number): number => Math.round(ms * (0.5 + Math.random()));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs `fn` in a transaction, again from the start when it fails with a
 * conflict (with jittered exponential back-off); any other failure is
 * rethrown at once. After the last attempt a RetriesExhaustedError (an
 * `unavailable` failure) is thrown.
 */
export async function inTransactionWithRetry<T>(
  db: Db,
  fn: (trx: Db) => Promise<T>,
  options: TransactionRetryOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? 8;
  const base = options.baseDelayMs ?? 10;
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction((trx) => fn(trx));
    } catch (err) {
      if (classifyFailure(err) !== 'conflict') throw err;
      if (attempt >= attempts) throw new RetriesExhaustedError(attempts, { cause: err });
      options.onRetry?.(attempt, err);
      await sleep(jittered(Math.min(1_000, base * 2 ** (attempt - 1))));
    }
  }
}
