import { markExhausted, type ClaimedRow, type Connector, type ConnectorStore, type ConversionQueue } from '@svc/conversions';
import { SpanKind, SpanStatusCode, parentContext, type Db, type Logger, type Span, type Tracer } from '@svc/runtime';
import type { ForwarderMetrics } from './metrics';
import type { DeliveryOutcome, PlatformClient } from './platforms/types';

export interface RetryPolicy {
  /** Attempts in all, the first included; then the row is `dead`. */
  maxAttempts: number;
  baseMs: number;
  capMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 10, baseMs: 30_000, capMs: 3_600_000 };

/**
 * Delay before attempt `attempts + 1`: exponential from `baseMs`, capped, with
 * "equal jitter" (half fixed, half random) so rows that failed together do
 * not all come back together. A platform's Retry-After is a floor.
 */
export function retryDelayMs(attempts: number, policy: RetryPolicy, retryAfterMs = 0, random = Math.random): number {
  const exp = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, attempts - 1));
  return Math.max(retryAfterMs, Math.round(exp / 2 + (random() * exp) / 2));
}

export interface DeliveryWorkerOptions {
  db: Db;
  connectors: ConnectorStore;
  queue: ConversionQueue;
  clientFor: (connector: Connector) => PlatformClient;
  logger: Logger;
  metrics?: ForwarderMetrics;
  retry?: RetryPolicy;
  /** Rows claimed per cycle. */
  batchSize?: number;
  /** How often due rows are looked for when nothing wakes the worker. */
  pollIntervalMs?: number;
  /** How long a claimed row is held before another worker may take it (a crash mid-call). */
  leaseMs?: number;
  /** With tracing on: each delivery a span, a child of the one that queued its row. */
  tracer?: Tracer;
}

/**
 * Sends due queue rows to their platforms and records each outcome. Any
 * number of workers may run (rows are claimed with SKIP LOCKED); stop() lets
 * the calls in hand finish and be recorded.
 */
export class DeliveryWorker {
  private readonly retry: RetryPolicy;
  private readonly clients = new Map<string, { version: string; client: PlatformClient }>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private again = false;

  constructor(private readonly o: DeliveryWorkerOptions) {
    this.retry = o.retry ?? DEFAULT_RETRY;
  }

  start(): void {
    this.stopped = false;
    this.wake();
  }

  /** Runs a cycle now (or right after the one in progress). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.cycle()
      .catch((err: unknown) => this.o.logger.error({ err }, 'conversion delivery cycle failed; retrying at the next poll'))
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.wake();
        } else {
          this.timer = setTimeout(() => this.wake(), this.o.pollIntervalMs ?? 1_000);
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One pass: claim due rows until none are left (or stop() is called), send them, record outcomes. */
  async cycle(): Promise<void> {
    const batchSize = this.o.batchSize ?? 50;
    for (;;) {
      const rows = await this.o.queue.claimDue(batchSize, this.o.leaseMs ?? 300_000);
      if (rows.length === 0) return;
      const connectors = new Map((await this.o.connectors.activeById([...new Set(rows.map((r) => r.connectorId))])).map((c) => [c.id, c]));
      await Promise.all(rows.map((row) => this.deliver(row, connectors.get(row.connectorId))));
      if (rows.length < batchSize || this.stopped) return;
    }
  }

  private async deliver(row: ClaimedRow, connector: Connector | undefined): Promise<void> {
    if (!connector) {
      // Disabled between the claim and now: hand the row back untouched.
      await this.o.queue.retryLater(row.id, null, 'connector disabled', 0);
      return;
    }
    const stopTimer = this.o.metrics?.deliverySeconds.startTimer({ platform: row.platform });
    const span = this.o.tracer?.startSpan(`deliver ${row.platform}`, { kind: SpanKind.CLIENT, attributes: { 'svc.platform': row.platform, 'svc.attempt': row.attempts } }, parentContext(row.traceparent ?? undefined));
    let outcome: DeliveryOutcome;
    try {
      outcome = await this.client(connector).send(row.conversion);
    } catch (err) {
      // A client bug must not strand the row: retry it like a network error.
      outcome = { kind: 'retry', status: null, error: `client error: ${(err as Error).message}` };
    }
    stopTimer?.();
    if (span) endDeliverySpan(span, outcome);
    await this.record(row, outcome);
  }

  private async record(row: ClaimedRow, outcome: DeliveryOutcome): Promise<void> {
    const count = (o: string) => this.o.metrics?.conversions.inc({ platform: row.platform, outcome: o });
    const log = { queueId: row.id, platform: row.platform, attempts: row.attempts };
    switch (outcome.kind) {
      case 'sent':
        await this.o.queue.markSent(row.id, outcome.status);
        count('sent');
        return;
      case 'retry':
        if (row.attempts >= this.retry.maxAttempts) {
          await this.o.queue.finish(row.id, 'dead', outcome.status, outcome.error);
          count('dead');
          this.o.logger.warn({ ...log, status: outcome.status, error: outcome.error }, 'conversion dead after its last retry');
        } else {
          await this.o.queue.retryLater(row.id, outcome.status, outcome.error, retryDelayMs(row.attempts, this.retry, outcome.retryAfterMs));
          count('retried');
        }
        return;
      case 'failed':
        await this.o.queue.finish(row.id, 'failed', outcome.status, outcome.error);
        if (outcome.clickUnusable) {
          await markExhausted(this.o.db, [{ orgId: row.orgId, type: row.conversion.click.type, id: row.conversion.click.id }]);
        }
        count('failed');
        this.o.logger.warn({ ...log, status: outcome.status, error: outcome.error }, 'conversion refused by the platform');
    }
  }

  /** One client per connector version, so Google's access token is reused across sends. */
  private client(connector: Connector): PlatformClient {
    const cached = this.clients.get(connector.id);
    if (cached?.version === connector.version) return cached.client;
    const client = this.o.clientFor(connector);
    this.clients.set(connector.id, { version: connector.version, client });
    return client;
  }
}

/** The delivery's span: its outcome and the platform's HTTP status; failed unless sent. */
function endDeliverySpan(span: Span, outcome: DeliveryOutcome): void {
  span.setAttribute('svc.outcome', outcome.kind);
  if (outcome.status !== null) span.setAttribute('http.response.status_code', outcome.status);
  if (outcome.kind !== 'sent') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error });
  span.end();
}
