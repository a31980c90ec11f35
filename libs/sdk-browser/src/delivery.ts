import { MAX_BATCH } from './config';
import { svcError } from './errors';
import type { EventQueue, QueueEntry, State, StoredEntry } from './queue';
import { BEACON, QUEUED, SENDING, batchBytes, fitBatch } from './queue';
import type { SendOutcome } from './transport';
import { backoffDelay } from './transport';
import type { SvcError, SvcEvent } from './types';

/** Keepalive requests of a document share 64 KiB in flight; a little is left for others on the page. */
export const KEEPALIVE_BUDGET = 64 * 1024 - 1024;

export interface DeliveryOptions {
  queue: EventQueue;
  send(events: SvcEvent[], keepalive: boolean): Promise<SendOutcome>;
  now(): number;
  random(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  flushAt: number;
  flushInterval: number;
  maxRetries: number;
  /** Whether fetch honours keepalive (without it a request dies with the page). */
  keepalive: boolean;
  /**
   * Where fetch has no keepalive: hands events to navigator.sendBeacon at page
   * exit; false when the browser refused them. No answer is ever seen, so the
   * events stay persisted, in flight, for the next page to send again.
   */
  sendBeacon?(events: SvcEvent[]): boolean;
  /** Accepted by the gateway (a 2xx): `body` is its answer. */
  delivered(entries: QueueEntry[], body: unknown, quota: string | null): void;
  /** Permanently dropped. */
  dropped(error: SvcError, entries: QueueEntry[]): void;
  /** Runs before each drain (cross-tab adoption). */
  beforeDrain?(): Promise<void> | void;
  log(...args: unknown[]): void;
}

export interface Delivery {
  enqueue(event: SvcEvent): void;
  /** Sends everything queued, through retries; resolves when the queue is empty. */
  flush(): Promise<void>;
  /**
   * Hands queued events (and, when the page is leaving, those in normal
   * requests) to keepalive requests; they stay persisted, marked in flight,
   * until a 2xx for them is seen.
   */
  beacon(leaving: boolean): void;
  /** Re-evaluates timers (after re-enabling). */
  schedule(): void;
  /** Merges events persisted by closed pages and sends them soon; returns the evicted. */
  adopt(stored: readonly StoredEntry[]): QueueEntry[];
  /** Drops everything queued (the caller reports it) and stops timers. */
  clear(): QueueEntry[];
}

/**
 * Delivery of the queue to /v1-batch: one normal request at a time, a send when
 * `flushAt` events are queued or `flushInterval` after the first, retries of
 * 5xx and network failures with jittered exponential backoff (the same
 * messageIds), permanent drops on 4xx, and keepalive sends when the page is
 * hidden or left. An event leaves the queue only on a 2xx for it or a
 * documented drop; until then it stays persisted.
 */
export function createDelivery(o: DeliveryOptions): Delivery {
  const { queue } = o;
  let draining: Promise<void> | undefined;
  let retryAt = 0;
  let timer: unknown;
  let timerDue = 0;
  let beaconBytes = 0;

  const disarm = (): void => {
    if (timer !== undefined) o.clearTimeout(timer);
    timer = undefined;
  };

  const schedule = (): void => {
    const queued = queue.queuedCount();
    if (!queued) return disarm();
    const now = o.now();
    const wait = retryAt > now ? retryAt - now : queued >= o.flushAt ? 0 : o.flushInterval;
    if (timer !== undefined && timerDue <= now + wait) return;
    disarm();
    timerDue = now + wait;
    timer = o.setTimeout(() => {
      timer = undefined;
      void drain();
    }, wait);
  };

  /**
   * Applies a send outcome to its entries; true when the queue must back off.
   * A 2xx acknowledges every entry still in the queue; a failure concerns only
   * those still in the state the request put them in: the normal request a
   * leaving page aborts must not count against events it has re-sent by
   * keepalive.
   */
  const settle = (batch: QueueEntry[], outcome: SendOutcome, state: State): boolean => {
    if (outcome.ok) {
      const acked = batch.filter(queue.has);
      queue.remove(acked);
      o.delivered(acked, outcome.body, outcome.quota);
      return false;
    }
    const live = batch.filter((x) => queue.has(x) && x.s === state);
    if (!outcome.retry) {
      queue.remove(live);
      o.dropped(svcError('rejected', `rejected with ${outcome.status}: ${outcome.message}`, outcome.status, outcome.body), live);
      return false;
    }
    for (const x of live) x.a++;
    const dead = live.filter((x) => x.a > o.maxRetries);
    if (dead.length) {
      queue.remove(dead);
      o.dropped(svcError('retries_exhausted', `gave up after ${o.maxRetries + 1} attempts: ${outcome.message}`, outcome.status || undefined, outcome.body), dead);
    }
    const again = live.filter((x) => x.a <= o.maxRetries);
    if (!again.length) return false;
    for (const x of again) x.s = QUEUED;
    queue.persist();
    const attempt = Math.max(...again.map((x) => x.a));
    retryAt = Math.max(retryAt, o.now() + backoffDelay(attempt, o.random));
    o.log(`send failed (${outcome.message}); retry ${attempt} of ${o.maxRetries} in ${Math.round(retryAt - o.now())} ms`);
    return true;
  };

  const run = async (): Promise<void> => {
    try {
      await o.beforeDrain?.();
    } catch (err) {
      o.log('adoption failed', err);
    }
    while (o.now() >= retryAt) {
      const taken = queue.take(o.maxRetries);
      if (taken.expired.length) o.dropped(svcError('expired', 'queued for more than 7 days'), taken.expired);
      if (taken.exhausted.length) o.dropped(svcError('retries_exhausted', 'no retries left'), taken.exhausted);
      if (taken.tooLarge.length) o.dropped(svcError('too_large', 'event larger than a request may be'), taken.tooLarge);
      if (!taken.batch.length) break;
      o.log(`sending ${taken.batch.length} event(s)`);
      const outcome = await o.send(
        taken.batch.map((x) => x.e),
        false,
      );
      if (settle(taken.batch, outcome, SENDING)) break;
    }
  };

  const drain = (): Promise<void> => {
    draining ??= run().finally(() => {
      draining = undefined;
      schedule();
    });
    return draining;
  };

  const sleep = (ms: number): Promise<void> => new Promise((resolve) => o.setTimeout(resolve, ms));

  /** Beacons of what is queued or in a request, within the same 64 KiB budget; a refused one ends it. */
  const beaconFallback = (sendBeacon: (events: SvcEvent[]) => boolean): void => {
    let pending = queue.list().filter((x) => x.s === QUEUED || x.s === SENDING);
    while (pending.length) {
      const chunk = fitBatch(pending, MAX_BATCH, KEEPALIVE_BUDGET - beaconBytes);
      if (!chunk.length || !sendBeacon(chunk.map((x) => x.e))) break;
      pending = pending.slice(chunk.length);
      beaconBytes += batchBytes(chunk);
      for (const x of chunk) x.s = BEACON;
      o.log(`beacon of ${chunk.length} event(s)`);
    }
  };

  return {
    enqueue(event) {
      const evicted = queue.push(event);
      if (evicted.length) o.dropped(svcError('evicted', `queue full (${MAX_BATCH}): oldest event evicted`), evicted);
      schedule();
    },
    async flush() {
      for (;;) {
        if (draining) await draining;
        else if (!queue.queuedCount()) return;
        else if (retryAt > o.now()) await sleep(retryAt - o.now());
        else await drain();
      }
    },
    beacon(leaving) {
      if (!o.keepalive) {
        // no request of ours survives the page: a beacon may, and everything stays persisted for the next one
        if (!leaving) void drain();
        else if (o.sendBeacon) beaconFallback(o.sendBeacon);
        return queue.persist(leaving);
      }
      let pending = queue.list().filter((x) => x.s === QUEUED || (leaving && x.s === SENDING));
      while (pending.length) {
        const chunk = fitBatch(pending, MAX_BATCH, KEEPALIVE_BUDGET - beaconBytes);
        if (!chunk.length) break;
        pending = pending.slice(chunk.length);
        const bytes = batchBytes(chunk);
        beaconBytes += bytes;
        for (const x of chunk) x.s = BEACON;
        o.log(`keepalive send of ${chunk.length} event(s), ${bytes} bytes`);
        void o
          .send(
            chunk.map((x) => x.e),
            true,
          )
          .then((outcome) => {
            beaconBytes -= bytes;
            settle(chunk, outcome, BEACON);
            schedule();
          });
      }
      queue.persist(leaving);
    },
    schedule,
    adopt(stored) {
      const evicted = queue.adopt(stored);
      if (o.now() >= retryAt) void drain();
      return evicted;
    },
    clear() {
      disarm();
      retryAt = 0;
      return queue.clear();
    },
  };
}
