import type { Bus } from '@svc/bus';
import type { ConsentDecisionEvent, TopicSpec } from '@svc/contracts';
import type { ConsentStore, StoredRecord } from './store';

/**
 * Puts recorded decisions on consent.decisions until none is left. The
 * records table is its own outbox: a decision is stored first (the audit
 * trail never depends on the log being up), then published and marked;
 * whatever a crash or an outage left unpublished is picked up by the next
 * run (a RepeatingDrain runs this). Delivery is at-least-once; `recordId`
 * lets consumers de-duplicate.
 */
export async function publishDecisions(store: ConsentStore, bus: Pick<Bus, 'produce'>, topic: TopicSpec): Promise<void> {
  for (;;) {
    const batch = await store.unpublished(200);
    if (batch.length === 0) return;
    const results = await bus.produce(topic, batch.map((r) => ({ key: `${r.org_id}:${r.anonymous_id}`, value: toEvent(r) })));
    const done = batch.filter((_, i) => results[i]?.ok).map((r) => r.id);
    await store.markPublished(done);
    if (done.length < batch.length) throw new Error(`${batch.length - done.length} consent decisions failed to publish`);
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
