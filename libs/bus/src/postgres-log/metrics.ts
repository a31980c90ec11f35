import type { Registry } from 'prom-client';
import type { Db } from '@svc/runtime';
import { observeConsumerLag, observeDeadLetters } from '../bus-metrics';
import { deadLetterTopicName } from '@svc/contracts';

/** The Postgres-backed log's consumer lag and dead-letter counts, by query at scrape time. */
export function observePostgresLog(registry: Registry, db: Db): void {
  observeConsumerLag(registry, async () => {
    const { rows } = await db.raw<{ rows: Array<{ group_id: string; topic: string; partition: number; lag: string }> }>(
      `select o.group_id, o.topic, o.partition, greatest(p.next_offset - coalesce(o.next_offset, 0), 0) as lag
       from bus.offsets o join bus.partitions p on p.topic = o.topic and p.partition = o.partition`,
    );
    return rows.map((r) => ({ group: r.group_id, topic: r.topic, partition: r.partition, lag: Number(r.lag) }));
  });
  observeDeadLetters(registry, async () => {
    // Per dead-letter topic, so each count is an index range, never a scan of the whole log.
    const { rows } = await db.raw<{ rows: Array<{ topic: string; messages: string }> }>(
      `select t.name as topic, (select coalesce(sum(b.last_offset - b.base_offset + 1), 0) from bus.batches b where b.topic = t.name) as messages
       from bus.topics t where t.name like ?`,
      [`%${deadLetterTopicName('')}`],
    );
    return rows.map((r) => ({ topic: r.topic, messages: Number(r.messages) }));
  });
}
