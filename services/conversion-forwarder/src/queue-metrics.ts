import { defineGauge, type Db, type Metrics } from '@svc/runtime';

/**
 * `forwarder_queue_conversions{status}`: conversions in the delivery queue
 * by status (queued, sent, failed, dead), counted when /metrics is scraped.
 * `dead` ones gave up after every retry and need an operator.
 */
export function observeForwarderQueue({ registry }: Metrics, db: Db): void {
  defineGauge(registry, {
    name: 'forwarder_queue_conversions',
    help: 'Conversions in the delivery queue by status: queued, sent, failed, dead.',
    labelNames: ['status'],
    async collect() {
      this.reset();
      // A count that fails leaves the gauge without samples for this scrape: /metrics itself must keep answering.
      const rows = await db('conversions.queue')
        .select('status')
        .count<Array<{ status: string; count: string }>>('* as count')
        .groupBy('status')
        .catch(() => []);
      for (const r of rows) this.set({ status: r.status }, Number(r.count));
    },
  });
}
