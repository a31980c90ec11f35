import { Gauge, type Registry } from 'prom-client';
import { LAG_METRIC } from './kafka/lag';

export const DEAD_LETTERS_METRIC = 'bus_dlq_messages';

export interface DeadLetterCount {
  /** The dead-letter topic, `<topic>.dlq`. */
  topic: string;
  messages: number;
}

export interface LagRow {
  group: string;
  topic: string;
  partition: number;
  lag: number;
}

/**
 * `bus_dlq_messages{topic}`: messages parked in each dead-letter topic (and
 * not yet expired by retention), counted when /metrics is scraped. One gauge
 * per registry: buses sharing a registry share one log, so the first one's
 * count stands for all.
 */
export function observeDeadLetters(registry: Registry, count: () => Promise<readonly DeadLetterCount[]>): void {
  if (registry.getSingleMetric(DEAD_LETTERS_METRIC)) return;
  new Gauge({
    name: DEAD_LETTERS_METRIC,
    help: 'Messages parked in each dead-letter topic (<topic>.dlq) and not yet expired; inspect with svcctl dlq list.',
    labelNames: ['topic'],
    registers: [registry],
    async collect() {
      this.reset();
      // A count that fails leaves the gauge without samples for this scrape: /metrics itself must keep answering.
      const counts = await count().catch(() => []);
      for (const { topic, messages } of counts) this.set({ topic }, messages);
    },
  });
}

/**
 * `bus_consumer_lag{group,topic,partition}` read from the log when
 * scraped, for a log that can answer it in one query (the Postgres-backed
 * log); the Kafka adapter sets the same gauge as its members handle batches.
 */
export function observeConsumerLag(registry: Registry, read: () => Promise<readonly LagRow[]>): void {
  if (registry.getSingleMetric(LAG_METRIC)) return;
  new Gauge({
    name: LAG_METRIC,
    help: 'Messages in a partition past the consumer group committed offset.',
    labelNames: ['group', 'topic', 'partition'],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await read().catch(() => []);
      for (const r of rows) this.set({ group: r.group, topic: r.topic, partition: String(r.partition) }, r.lag);
    },
  });
}
