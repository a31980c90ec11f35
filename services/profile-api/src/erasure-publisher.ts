import type { Bus } from '@svc/bus';
import type { TopicSpec } from '@svc/contracts';
import type { Db, Logger } from '@svc/runtime';
import { publishPendingErasures } from '@svc/identity';

/**
 * Puts recorded erasure requests on profiles.erasure-requests: at once after
 * a request (coalescing concurrent calls), and every few seconds whatever an
 * outage or a crash left unpublished (privacy.erasure_requests is its own
 * outbox, as consent records are). Never throws.
 */
export class ErasurePublisher {
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly bus: Pick<Bus, 'produce'>,
    private readonly topic: TopicSpec,
    private readonly logger: Logger,
  ) {}

  readonly publish = (): Promise<void> => {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await publishPendingErasures(this.db, this.bus, this.topic);
      } while (this.again);
    })()
      .catch((err: unknown) => this.logger.warn({ err }, 'erasure requests not published yet; will retry'))
      .finally(() => (this.running = undefined));
    return this.running;
  };

  start(intervalMs = 5_000): void {
    this.timer = setInterval(() => void this.publish(), intervalMs);
    this.timer.unref();
    void this.publish();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
