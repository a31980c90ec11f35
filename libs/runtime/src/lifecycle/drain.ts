import type { Logger } from '../logging';

/**
 * Work that empties a backlog, such as a table that is its own outbox (a
 * record is stored first, then published and marked): run at once on
 * demand, and every few seconds for whatever an outage or a crash left.
 * Calls coalesce: a call while a run is in hand makes it run once more, so
 * nothing recorded meanwhile waits for the timer. Never throws: a failure
 * is logged and left to the next run.
 */
export class RepeatingDrain {
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;

  /** `failed` is the warning logged when a run fails (what is left, and that it will be retried). */
  constructor(
    private readonly work: () => Promise<unknown>,
    private readonly logger: Logger,
    private readonly failed: string,
  ) {}

  readonly run = (): Promise<void> => {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.work();
      } while (this.again);
    })()
      .catch((err: unknown) => {
        this.logger.warn({ err }, this.failed);
      })
      .finally(() => (this.running = undefined));
    return this.running;
  };

  /** Runs now, then every `intervalMs`. */
  start(intervalMs = 5_000): void {
    this.timer = setInterval(() => void this.run(), intervalMs);
    this.timer.unref();
    void this.run();
  }

  /** No more runs; waits for the one in hand. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
