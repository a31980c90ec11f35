import type { Bus } from '@svc/bus';
import type { ConsentDecisionEvent, TopicSpec } from '@svc/contracts';
import type { Logger } from '@svc/runtime';
import type { ConsentStore, StoredRecord } from './store';

/**
 * Puts recorded decisions on consent.decisions. The records table is its own
 * outbox: a decision is stored first (the audit trail never depends on the
 * log being up), then published and marked; whatever a crash or an outage
 * left unpublished is picked up by the next pass. Delivery is at-least-once;
 * `recordId` lets consumers de-duplicate.
 */
export class ConsentPublisher {
  private running: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: ConsentStore,
    private readonly bus: Pick<Bus, 'produce'>,
    private readonly topic: TopicSpec,
    private readonly logger: Logger,
  ) {}

  /** Publishes now (coalescing concurrent calls); never throws. */
  publishPending(): Promise<void> {
    this.running ??= this.drain()
      .catch((err: unknown) => this.logger.warn({ err }, 'consent decisions not published yet; will retry'))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  /** Retries what is left every `intervalMs`. */
  start(intervalMs = 5_000): void {
    this.timer = setInterval(() => void this.publishPending(), intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private async drain(): Promise<void> {
    for (;;) {
      const batch = await this.store.unpublished(200);
      if (batch.length === 0) return;
      const results = await this.bus.produce(this.topic, batch.map((r) => ({ key: `${r.org_id}:${r.anonymous_id}`, value: toEvent(r) })));
      const done = batch.filter((_, i) => results[i]?.ok).map((r) => r.id);
      await this.store.markPublished(done);
      if (done.length < batch.length) throw new Error(`${batch.length - done.length} consent decisions failed to publish`);
    }
  }
}

function toEvent(r: StoredRecord): ConsentDecisionEvent {
  return {
    v: 1,
    orgId: r.org_id,
    recordId: r.id,
    anonymousId: r.anonymous_id,
    userId: r.user_id,
    purposes: r.purposes as Record<string, boolean>,
    source: r.source,
    clientTimestamp: r.client_timestamp,
    receivedAt: r.received_at,
  };
}
