import type { IncomingMessage, MessageBatch } from '@svc/bus';
import type { ConversionCandidate } from '@svc/contracts';
import { markExhausted, type ConnectorStore, type ConversionQueue, type NewQueueRow, type Platform } from '@svc/conversions';
import { clickIdsOfProfile } from '@svc/identity';
import { inConsumerSpans, type Db, type Logger, type Tracer } from '@svc/runtime';
import type { ForwarderMetrics } from './metrics';
import { pickClick, qualifyingConnectors, toConversion, type StoredClick } from './plan';
import { USABLE_CLICK_TYPES } from './platforms/types';

export interface CandidateHandlerDeps {
  db: Db;
  connectors: ConnectorStore;
  queue: ConversionQueue;
  logger: Logger;
  metrics?: ForwarderMetrics;
  /** Called after rows were queued, so delivery starts without waiting for its poll. */
  onQueued?: () => void;
  /** With tracing on: a span per request the batch's candidates came from (a child of the resolver's), which their rows keep. */
  tracer?: Tracer;
  now?: () => Date;
}

const ALL_CLICK_TYPES = [...new Set(Object.values(USABLE_CLICK_TYPES).flat())];

/**
 * Turns conversions.candidates into queue rows: per active connector whose
 * names the event matches, with the profile's best live click for that
 * platform. Idempotent (the queue's unique indexes), so the bus may redeliver.
 */
export function createCandidateHandler(deps: CandidateHandlerDeps) {
  const now = deps.now ?? (() => new Date());
  const queueCandidates = async (batch: MessageBatch<ConversionCandidate>, traceOf?: (m: IncomingMessage<ConversionCandidate>) => string | undefined): Promise<void> => {
    const rules = await deps.connectors.activeRules([...new Set(batch.messages.map((m) => m.value.orgId))]);
    const rows: NewQueueRow[] = [];
    const expired = new Map<string, StoredClick & { orgId: string }>();
    for (const message of batch.messages) {
      const candidate = message.value;
      const traceparent = traceOf?.(message);
      const targets = qualifyingConnectors(candidate, rules);
      if (targets.length === 0) continue;
      const clicks = await clicksOf(deps.db, candidate.orgId, candidate.profileId);
      for (const connector of targets) {
        const { click, expired: past } = pickClick(connector.platform, clicks, now());
        for (const c of past) expired.set(`${candidate.orgId}\u0000${c.type}\u0000${c.id}`, { ...c, orgId: candidate.orgId });
        if (!click) {
          deps.metrics?.conversions.inc({ platform: connector.platform, outcome: 'no_click' });
          continue;
        }
        rows.push({
          orgId: candidate.orgId,
          connectorId: connector.id,
          platform: connector.platform,
          messageId: candidate.messageId,
          eventId: candidate.eventId,
          profileId: candidate.profileId,
          eventName: candidate.eventName,
          orderId: candidate.orderId,
          conversion: toConversion(candidate, click),
          ...(traceparent === undefined ? {} : { traceparent }),
        });
      }
    }
    await markExhausted(deps.db, [...expired.values()]);
    const queued = await deps.queue.enqueue(rows);
    countQueued(deps.metrics, rows, queued);
    if (queued.length > 0) deps.onQueued?.();
  };
  return (batch: MessageBatch<ConversionCandidate>): Promise<void> => inConsumerSpans(deps.tracer, batch.topic, batch.messages, (traceOf) => queueCandidates(batch, traceOf));
}

/** The click IDs of the profile the candidate names, or of the profile it was merged into since. */
async function clicksOf(db: Db, orgId: string, profileId: string): Promise<StoredClick[]> {
  const clicks = await clickIdsOfProfile(db, orgId, profileId, ALL_CLICK_TYPES);
  if (clicks.length === 0) return [];
  const { rows } = await db.raw<{ rows: Array<{ click_type: string; click_id: string }> }>(
    `select click_type, click_id from conversions.exhausted_click_ids
     where org_id = ? and (click_type, click_id) in (select * from unnest(?::text[], ?::text[]))`,
    [orgId, clicks.map((c) => c.type), clicks.map((c) => c.id)],
  );
  const exhausted = new Set(rows.map((r) => `${r.click_type}\n${r.click_id}`));
  return clicks.map((c) => ({ ...c, isExhausted: exhausted.has(`${c.type}\n${c.id}`) }));
}

function countQueued(metrics: ForwarderMetrics | undefined, rows: readonly NewQueueRow[], queued: readonly Platform[]): void {
  if (!metrics) return;
  const tally = (platforms: readonly Platform[]) => platforms.reduce((m, p) => m.set(p, (m.get(p) ?? 0) + 1), new Map<Platform, number>());
  const queuedBy = tally(queued);
  for (const [platform, offered] of tally(rows.map((r) => r.platform))) {
    const n = queuedBy.get(platform) ?? 0;
    metrics.conversions.inc({ platform, outcome: 'queued' }, n);
    metrics.conversions.inc({ platform, outcome: 'duplicate' }, offered - n);
  }
}
