/** Helpers both bus adapters use; nothing here knows Kafka or PostgreSQL. */

import type { GatherOptions, SubscribeOptions, Subscription } from './port';

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
 * A subscription's options as both adapters take them: some topics, a whole
 * maxBatchSize (default 100), and the gather option checked.
 */
export function checkedSubscribeOptions(options: Pick<SubscribeOptions, 'topics' | 'maxBatchSize' | 'gather'>): { maxBatchSize: number; gather: GatherOptions | undefined } {
  if (options.topics.length === 0) throw new Error('subscribe: no topics given');
  const maxBatchSize = options.maxBatchSize ?? 100;
  if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) throw new RangeError(`subscribe: invalid maxBatchSize ${maxBatchSize}`);
  return { maxBatchSize, gather: checkedGather(options.gather) };
}

/** A started member as the port's Subscription: stopping it also drops it from the adapter's `members`, which the adapter stops at close. */
export function subscriptionOf<M extends Subscription>(member: M, members: Set<M>): Subscription {
  return {
    pause: () => member.pause(),
    resume: () => member.resume(),
    stop: async () => {
      await member.stop();
      members.delete(member);
    },
  };
}

/**
 * A subscription's gather option, checked; undefined when there is nothing
 * to gather for: none asked, or no wait (a Kafka fetch that may not wait
 * would poll in a loop).
 */
function checkedGather(gather: GatherOptions | undefined): GatherOptions | undefined {
  if (gather === undefined) return undefined;
  const { minBytes, maxWaitMs } = gather;
  if (!Number.isInteger(minBytes) || minBytes < 1) throw new RangeError(`subscribe: invalid gather.minBytes ${minBytes}`);
  if (!Number.isInteger(maxWaitMs) || maxWaitMs < 0 || maxWaitMs > MAX_GATHER_WAIT_MS) {
    throw new RangeError(`subscribe: invalid gather.maxWaitMs ${maxWaitMs} (0 to ${MAX_GATHER_WAIT_MS})`);
  }
  return maxWaitMs === 0 ? undefined : { minBytes, maxWaitMs };
}

/**
 * One batch in flight, and every item arriving meanwhile gathered into the
 * next: the shape of both adapters' write paths (group commit on the
 * Postgres-backed log, one producer request on Kafka). Under load a batch
 * carries many callers' items, so the per-batch costs (a commit and its
 * flush, a round trip and acks=all) are shared; idle, an item waits only
 * until the event loop has handled what already arrived (a linger of 1-2 ms
 * on top measured no better).
 *
 * Order: batches go strictly one after the other, each keeping its items in
 * arrival order. A batch takes items up to `maxSize` (always at least one,
 * so a single item larger than that still goes, alone).
 */
export class BatchGatherer<T> {
  private queue: T[] = [];
  private busy = false;
  private scheduled = false;

  constructor(
    private readonly options: {
      maxSize: number;
      sizeOf: (item: T) => number;
      /** Runs one batch; items it fails are for it to answer, it must not reject. */
      run: (items: T[]) => Promise<void>;
      /** An item given up while still queued (its caller's deadline passed): never taken. */
      dropped?: (item: T) => boolean;
    },
  ) {}

  push(item: T): void {
    this.queue.push(item);
    if (!this.busy && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    if (this.busy) return;
    const { dropped, maxSize, sizeOf, run } = this.options;
    if (dropped) this.queue = this.queue.filter((item) => !dropped(item));
    if (this.queue.length === 0) return;
    let take = 0;
    let size = 0;
    while (take < this.queue.length) {
      const next = sizeOf(this.queue[take] as T);
      if (take > 0 && size + next > maxSize) break;
      size += next;
      take++;
    }
    const batch = this.queue.slice(0, take);
    this.queue = this.queue.slice(take);
    this.busy = true;
    void run(batch).finally(() => {
      this.busy = false;
      // What arrived while the batch was in flight goes at once: it has waited already.
      if (this.queue.length > 0) this.flush();
    });
  }
}
