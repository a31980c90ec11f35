import { Limits, checkEvent, softCapBreaches, type RawEventEnvelope, type SoftCapBreach } from '@svc/contracts';
import { screenContext } from './context';

export interface RequestFacts {
  orgId: string;
  requestId: string;
  clientIp: string;
  receivedAt: Date;
}

export interface PreparedEvent {
  /** Position in the request's batch. */
  index: number;
  envelope: RawEventEnvelope;
}

export interface EventFailure {
  index: number;
  /** The event's messageId, or `batch[<index>]` when it has none to quote. */
  label: string;
  reason: string;
}

export interface SoftCapWarning {
  index: number;
  field: 'properties' | 'traits';
  breach: SoftCapBreach;
}

export interface PreparedBatch {
  events: PreparedEvent[];
  failures: EventFailure[];
  warnings: SoftCapWarning[];
  clampedTimestamps: number;
}

/**
 * Per-event validation and the warn-only transforms, with no I/O: each bad
 * event fails alone with the spec's reason; each good one becomes the raw-log
 * envelope (context screened, future timestamp clamped to the receive time).
 */
export function prepareEvents(batch: readonly unknown[], facts: RequestFacts): PreparedBatch {
  const out: PreparedBatch = { events: [], failures: [], warnings: [], clampedTimestamps: 0 };
  const receivedAt = facts.receivedAt.toISOString();
  const latestAllowed = facts.receivedAt.getTime() + Limits.futureTimestampToleranceMs;

  batch.forEach((raw, index) => {
    const checked = checkEvent(raw);
    if (!checked.ok) {
      out.failures.push({ index, label: labelOf(raw, index), reason: checked.reason });
      return;
    }
    const valid = checked.event;
    const event = { ...valid, context: screenContext(valid.context, facts.clientIp) };
    let originalTimestamp: string | undefined;
    if (Date.parse(event.timestamp) > latestAllowed) {
      originalTimestamp = event.timestamp;
      event.timestamp = receivedAt;
      out.clampedTimestamps++;
    }
    for (const field of ['properties', 'traits'] as const) {
      for (const breach of softCapBreaches(event[field])) out.warnings.push({ index, field, breach });
    }
    const { orgId, requestId, clientIp } = facts;
    out.events.push({
      index,
      envelope:
        originalTimestamp === undefined
          ? { v: 1, orgId, receivedAt, requestId, clientIp, event }
          : { v: 1, orgId, receivedAt, requestId, clientIp, originalTimestamp, event },
    });
  });
  return out;
}

/** How a failure names its event: the messageId when there is a usable one. */
function labelOf(raw: unknown, index: number): string {
  const id = (raw as { messageId?: unknown } | null)?.messageId;
  return typeof id === 'string' && id !== '' && id.length <= Limits.identifierMaxLength ? id : `batch[${index}]`;
}

/** The `errors` array of the response: at most the first ten failures, in batch order. */
export function errorLines(failures: readonly EventFailure[]): string[] {
  return [...failures]
    .sort((a, b) => a.index - b.index)
    .slice(0, 10)
    .map((f) => `${f.label}: ${f.reason}`);
}
