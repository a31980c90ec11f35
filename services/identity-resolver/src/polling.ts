import type { Logger } from '@svc/runtime';

/**
 * Work the resolver does beside its consumers, found in the database
 * (unmerge requests, phone restatements): `one()` does one piece, in a
 * transaction of its own, and says whether there was one. A pass does pieces
 * until none is left; passes run at start and then every `intervalMs`, one
 * at a time (a tick during a long pass leaves it be). A pass that fails is
 * logged and the next tick tries again.
 */
export interface Polling {
  /** A pass now (or the one running), resolved when it ends. */
  pass(): Promise<void>;
  /** No more pieces begun; resolved when the one under way ends. */
  stop(): Promise<void>;
}

export function startPolling(o: { what: string; one: () => Promise<boolean>; logger: Logger; intervalMs: number }): Polling {
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  let busy = false;
  const pass = () => {
    if (busy) return running;
    busy = true;
    running = (async () => {
      try {
        while (!stopped && (await o.one()));
      } catch (err) {
        if (!stopped) o.logger.warn({ err }, `${o.what}: pass failed; next pass soon`);
      } finally {
        busy = false;
      }
    })();
    return running;
  };
  void pass();
  const timer = setInterval(() => void pass(), o.intervalMs);
  timer.unref();
  return {
    pass,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
