import { Gauge, type Registry } from 'prom-client';

export const LAG_METRIC = 'bus_consumer_lag';
type LagLabels = 'group' | 'topic' | 'partition';

/**
 * `bus_consumer_lag{group,topic,partition}`: messages in the partition past
 * the group's committed position, as of the last batch the member handled
 * (the partition's high watermark then, minus the offset it committed).
 */
export class LagGauge {
  private readonly gauge: Gauge<LagLabels>;

  constructor(registry: Registry) {
    // Several buses (or subscriptions) may share one registry: one gauge, many series.
    const existing = registry.getSingleMetric(LAG_METRIC);
    this.gauge =
      existing instanceof Gauge
        ? (existing as Gauge<LagLabels>)
        : new Gauge({
            name: LAG_METRIC,
            help: 'Messages in a partition past the consumer group committed offset, as of its last handled batch.',
            labelNames: ['group', 'topic', 'partition'],
            registers: [registry],
          });
  }

  set(group: string, topic: string, partition: number, highWatermark: string, committed: bigint): void {
    const lag = BigInt(highWatermark) - committed;
    this.gauge.set({ group, topic, partition: String(partition) }, Number(lag > 0n ? lag : 0n));
  }

  /** Drops the series of a member that left (another member reports them from now on). */
  remove(group: string, topic: string, partition: number): void {
    this.gauge.remove({ group, topic, partition: String(partition) });
  }
}
