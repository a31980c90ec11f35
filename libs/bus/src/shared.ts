/** Helpers both bus adapters use; nothing here knows Kafka or PostgreSQL. */

import type { GatherOptions } from './port';

/** What the adapter logs through; a pino logger fits. */
export interface BusLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentLogger: BusLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** Rejects with `onTimeout()` after `ms`; the losing operation's own rejection is swallowed. */
export async function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  work.catch(() => undefined);
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Exponential back-off with jitter: 100 ms, 200 ms, ... capped at `capMs`. */
export function backoffMs(failures: number, capMs = 5_000): number {
  const base = Math.min(capMs, 100 * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** The longest a subscription may let a batch gather (it also delays how soon a pause or stop takes effect). */
export const MAX_GATHER_WAIT_MS = 5_000;

/**
 * A subscription's gather option, checked (both adapters take it the same
 * way); undefined when there is nothing to gather for: none asked, or no
 * wait (a Kafka fetch that may not wait would poll in a loop).
 */
export function checkedGather(gather: GatherOptions | undefined): GatherOptions | undefined {
  if (gather === undefined) return undefined;
  const { minBytes, maxWaitMs } = gather;
  if (!Number.isInteger(minBytes) || minBytes < 1) throw new RangeError(`subscribe: invalid gather.minBytes ${minBytes}`);
  if (!Number.isInteger(maxWaitMs) || maxWaitMs < 0 || maxWaitMs > MAX_GATHER_WAIT_MS) {
    throw new RangeError(`subscribe: invalid gather.maxWaitMs ${maxWaitMs} (0 to ${MAX_GATHER_WAIT_MS})`);
  }
  return maxWaitMs === 0 ? undefined : { minBytes, maxWaitMs };
}
