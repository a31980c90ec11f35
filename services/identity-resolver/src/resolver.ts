import { randomUUID } from 'node:crypto';
import { deadLetterMessage, deadLetterTopicFor, type BatchHandler, type Bus, type HandlerOutcome, type IncomingMessage, type MessageBatch } from '@svc/bus';
import type { RawEventEnvelope, RawLogMessage, ResolvedEvent, TopicSpec } from '@svc/contracts';
import { DEGRADED, inConsumerSpans, type Db, type Logger, type Tracer } from '@svc/runtime';
import { classifyFailure, inTransactionWithRetry, openRawLog, type DataKeyReader, type FailureKind, type OutputTopics } from '@svc/identity';
import type { ResolverMetrics } from './metrics';
import { processBatch, type BatchOptions, type BatchOutcome } from './process-batch';

export type ResolverTopics = OutputTopics & { eventsRaw: TopicSpec };

export interface ResolverDeps {
  db: Db;
  bus: Bus;
  topics: ResolverTopics;
  logger: Logger;
  metrics?: ResolverMetrics;
  /** The raw log's data keys, for opening sealed events. */
  keys: Pick<DataKeyReader, 'read'>;
  batch: BatchOptions;
  /** Events per transaction; a larger bus batch is split (default 200). Bounds the locks one transaction holds. */
  maxEventsPerTransaction?: number;
  /** Attempts of one transaction on deadlocks and serialization failures (default 8). */
  transactionAttempts?: number;
  /** Attempts of one event alone, after its batch failed on the data, before it is dead-lettered (default 3). */
  poisonAttempts?: number;
  /** Called after each committed transaction with its events.resolved messages (the outbox relay's memory and wake-up). */
  onCommitted?: (resolved: readonly ResolvedEvent[]) => void;
  /** Where batches failing without proof of bad data are counted (readiness reads it); one per process. */
  stalls?: StallWatch;
  /** With tracing on: each transaction's events get a span per request they came in (a child of its traceparent). */
  tracer?: Tracer;
}

/** A batch failed on events that were not proven bad: handed back to the bus, retried after its back-off, never dead-lettered. */
export class UnprovenFailureError extends Error {
  constructor(events: number, options: { cause: unknown }) {
    super(`${events} event(s) failed alone, and so did a minimal event of their organisation: the fault may be the resolver's own; retrying, not dead-lettering`, options);
    this.name = 'UnprovenFailureError';
  }
}

/**
 * Events failing without proof that their data is to blame (see the
 * handler): retried after the bus's back-off, never dead-lettered, and
 * reported by readiness until they pass or are proven bad.
 */
export class StallWatch {
  private readonly failing = new Set<string>();

  stalledOn(key: string): void {
    this.failing.add(key);
  }

  /** `key` is no longer failing: stored, or dead-lettered after proof. */
  settled(key: string): void {
    this.failing.delete(key);
  }

  /** Events currently failing without proof. */
  get stalled(): number {
    return this.failing.size;
  }

  /** The `resolving` readiness check: degraded while any event fails without proof. */
  readonly readinessCheck = async (): Promise<string> => (this.stalled > 0 ? DEGRADED : 'ok');
}

const keyOf = (m: IncomingMessage): string => `${m.topic}/${m.partition}/${m.offset}`;

/** An event proven bad: parked with the reason it fails. */
type DeadLetter = Extract<HandlerOutcome, { kind: 'dead-letter' }>;

/**
 * What becomes of a batch, in the bus's words: stored; retried, handed back
 * to the bus to come again (the database or the log unavailable, or failing
 * events nothing proves bad: an UnprovenFailureError); or its failing events
 * proven bad, each dead-lettered with its reason, and the rest stored.
 */
type Verdict = Exclude<HandlerOutcome, DeadLetter> | { kind: 'dead-letter'; events: Array<[IncomingMessage<RawLogMessage>, DeadLetter]> };

/** Thrown to roll the probe's transaction back once it has passed. */
const ROLLBACK = Symbol('rollback the probe');

const chunk = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

/** Why an event was dead-lettered, in one line: the database's own message (knex prefixes the statement), or the error. */
export function deadLetterReason(err: unknown): string {
  const e = err instanceof Error ? err : new Error(String(err));
  const code = (e as { code?: unknown }).code;
  const text =
    typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)
      ? `SQLSTATE ${code}: ${e.message.split(' - ').pop() ?? e.message}`
      : `${e.name}: ${e.message}`;
  return `identity-resolver: ${text.replace(/\s+/g, ' ').trim()}`.slice(0, 1_000);
}

/**
 * The raw-topic batch handler. Each batch (split into transactions of at
 * most maxEventsPerTransaction) is resolved in one transaction, retried on
 * conflicts. Returning lets the bus commit the offsets; so only after the
 * transaction committed.
 *
 * - The database unavailable (or conflicts that do not go away): throws, so
 *   the bus keeps the batch uncommitted and delivers it again after a back-off.
 * - Any other failure may be about the data: the batch is run again one event
 *   per transaction. An event that keeps failing alone is dead-lettered (the
 *   raw topic's dead-letter topic, with `x-dlq-reason`) only when proven bad:
 *   a batch-mate passed, or a minimal event of its organisation passes (a
 *   probe, rolled back). So one poison event never blocks its partition; one
 *   not proven bad fails the batch (UnprovenFailureError), which the bus
 *   delivers again after its back-off: a bug of the resolver's own costs
 *   time, counted and shown in readiness, never an event.
 */
export function createResolverHandler(deps: ResolverDeps): BatchHandler<RawLogMessage> {
  const perTransaction = deps.maxEventsPerTransaction ?? 200;
  const poisonAttempts = deps.poisonAttempts ?? 3;
  const deadLetterTopic = deadLetterTopicFor(deps.topics.eventsRaw);
  const stalls = deps.stalls ?? new StallWatch();

  const run = async (messages: ReadonlyArray<IncomingMessage<RawLogMessage>>): Promise<BatchOutcome> => {
    const started = process.hrtime.bigint();
    // Sealed events open with their subject's key; an event whose key an erasure deleted is left out.
    const opened = await openRawLog(deps.keys, messages.map((m) => m.value));
    const outcome = await inConsumerSpans(deps.tracer, deps.topics.eventsRaw.name, messages, (traceOf) => {
      const batch = traceOf ? { ...deps.batch, traceparents: requestTraces(messages, traceOf) } : deps.batch;
      return inTransactionWithRetry(deps.db, (trx) => processBatch(trx, opened.events, batch), {
        attempts: deps.transactionAttempts ?? 8,
        onRetry: (attempt, err) => {
          deps.metrics?.transactionRetries.inc();
          deps.logger.debug({ attempt, err }, 'resolver: transaction conflicted; running it again');
        },
      });
    });
    if (stalls.stalled > 0) for (const m of messages) stalls.settled(keyOf(m));
    deps.onCommitted?.(outcome.resolved);
    if (outcome.invalidIdentityRules.length > 0) {
      deps.logger.warn({ orgIds: outcome.invalidIdentityRules }, 'resolver: stored identity rules fail the check; the defaults applied (svcctl identity-rules set fixes them)');
    }
    if (outcome.invalidEngagementRules.length > 0) {
      deps.logger.warn({ orgIds: outcome.invalidEngagementRules }, 'resolver: stored engagement rules fail the check; their events scored no points (svcctl rules set fixes them)');
    }
    const m = deps.metrics;
    if (m) {
      m.batchSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
      m.events.inc({ outcome: 'stored' }, outcome.stored);
      m.events.inc({ outcome: 'duplicate' }, outcome.duplicates);
      m.events.inc({ outcome: 'erased' }, opened.erased);
      m.eventsSuppressed.inc(outcome.suppressed);
      m.profilesCreated.inc(outcome.profilesCreated);
      for (const w of outcome.warnings) m.warnings.inc({ kind: w.kind });
      for (const reason of outcome.merges) m.merges.inc({ reason });
    }
    return outcome;
  };

  const deadLetter = async (m: IncomingMessage<RawLogMessage>, { reason }: DeadLetter): Promise<void> => {
    const [result] = await deps.bus.produce(deadLetterTopic, [deadLetterMessage(m, reason, m)]);
    if (!result?.ok) throw result?.error ?? new Error('dead-letter produce returned no result');
    deps.metrics?.events.inc({ outcome: 'dead_lettered' });
    deps.logger.error({ topic: m.topic, partition: m.partition, offset: m.offset, reason }, 'resolver: dead-lettered a poison event');
  };

  /**
   * Whether the code path works for this organisation right now: a minimal page event resolved in a
   * transaction that is then rolled back (nothing of it stays). A failure of its own says nothing about the
   * event in hand; a failure of any other kind is the database's, and is left to the bus's back-off.
   */
  const probe = async (orgId: string): Promise<boolean> => {
    const envelope: RawEventEnvelope = {
      v: 1,
      orgId,
      receivedAt: new Date().toISOString(),
      requestId: 'resolver-probe',
      clientIp: '127.0.0.1',
      event: { type: 'page', messageId: `probe-${randomUUID()}`, anonymousId: `probe-${randomUUID()}`, timestamp: new Date().toISOString() },
    };
    try {
      await deps.db.transaction(async (trx) => {
        await processBatch(trx, [envelope], deps.batch);
        throw ROLLBACK;
      });
    } catch (err) {
      if (err === ROLLBACK) return true;
      if (classifyFailure(err) === 'data') return false;
      throw err;
    }
    return false;
  };

  /** Runs a transaction; a failure becomes what it means for the batch, not an exception to classify later. */
  const attempt = async (messages: ReadonlyArray<IncomingMessage<RawLogMessage>>): Promise<{ ok: true } | { ok: false; kind: FailureKind; cause: unknown }> => {
    try {
      await run(messages);
      return { ok: true };
    } catch (err) {
      return { ok: false, kind: classifyFailure(err), cause: err };
    }
  };

  /** Events failing alone with nothing proving them bad: counted as stalled and retried, never dead-lettered. */
  const retryUnproven = (events: ReadonlyArray<[IncomingMessage<RawLogMessage>, unknown]>): Verdict => {
    const [first] = events;
    for (const [m] of events) stalls.stalledOn(keyOf(m));
    deps.metrics?.batchFailures.inc({ kind: 'unproven' });
    deps.logger.error({ err: first?.[1], events: events.length }, 'resolver: events fail alone with nothing proving them bad; retrying after the bus back-off instead of dead-lettering');
    return { kind: 'retry', cause: new UnprovenFailureError(events.length, { cause: first?.[1] }) };
  };

  /** What to do with a batch: every step's result is a value, decided once, here. */
  const resolveBatch = async (messages: ReadonlyArray<IncomingMessage<RawLogMessage>>): Promise<Verdict> => {
    const whole = await attempt(messages);
    if (whole.ok) return { kind: 'stored' };
    deps.metrics?.batchFailures.inc({ kind: whole.kind });
    if (whole.kind !== 'data') return { kind: 'retry', cause: whole.cause };
    deps.logger.warn({ err: whole.cause, events: messages.length }, 'resolver: batch failed on its data; isolating the failing event');

    const failedAlone: Array<[IncomingMessage<RawLogMessage>, unknown]> = [];
    let batchMatePassed = false;
    for (const m of messages) {
      let last: Awaited<ReturnType<typeof attempt>> = { ok: true };
      for (let n = 1; n <= poisonAttempts; n++) {
        last = await attempt([m]);
        if (last.ok) break;
        if (last.kind !== 'data') return { kind: 'retry', cause: last.cause };
      }
      if (last.ok) batchMatePassed = true;
      else failedAlone.push([m, last.cause]);
    }
    // Proof that the event is to blame: a batch-mate passed in its isolation, or else a minimal event of
    // the same organisation passes (in a transaction rolled back). Without it the failure may be our own.
    const orgsProbed = new Map<string, Promise<boolean>>();
    const probePasses = (orgId: string) => orgsProbed.get(orgId) ?? orgsProbed.set(orgId, probe(orgId)).get(orgId)!;
    const unproven: typeof failedAlone = [];
    for (const failed of failedAlone) {
      if (!batchMatePassed && !(await probePasses(failed[0].value.orgId))) unproven.push(failed);
    }
    if (unproven.length > 0) return retryUnproven(unproven);
    // The proof came after the events' own attempts. A fault that was gone by then (a bug of ours that a
    // deploy fixed, a dependency back) must not cost them: each gets one more attempt now, and only an
    // event that still fails after its proof is to blame.
    const guilty: Array<[IncomingMessage<RawLogMessage>, DeadLetter]> = [];
    for (const [m] of failedAlone) {
      const again = await attempt([m]);
      if (again.ok) continue;
      if (again.kind !== 'data') return { kind: 'retry', cause: again.cause };
      guilty.push([m, { kind: 'dead-letter', reason: deadLetterReason(again.cause) }]);
    }
    return guilty.length > 0 ? { kind: 'dead-letter', events: guilty } : { kind: 'stored' };
  };

  const handle = async (messages: ReadonlyArray<IncomingMessage<RawLogMessage>>): Promise<void> => {
    const verdict = await resolveBatch(messages);
    switch (verdict.kind) {
      case 'stored':
        return;
      case 'retry':
        // Uncommitted: the bus delivers the batch again after its back-off.
        throw verdict.cause;
      case 'dead-letter':
        for (const [m, outcome] of verdict.events) {
          await deadLetter(m, outcome);
          stalls.settled(keyOf(m));
        }
    }
  };

  return async (batch: MessageBatch<RawLogMessage>) => {
    for (const part of chunk(batch.messages, perTransaction)) await handle(part);
  };
}

/** The traceparent of the span of each request's messages, by requestId (what the batch's outputs carry). */
function requestTraces(messages: ReadonlyArray<IncomingMessage<RawLogMessage>>, traceOf: (m: IncomingMessage<RawLogMessage>) => string | undefined): Map<string, string> {
  const traces = new Map<string, string>();
  for (const m of messages) {
    if (traces.has(m.value.requestId)) continue;
    const traceparent = traceOf(m);
    if (traceparent !== undefined) traces.set(m.value.requestId, traceparent);
  }
  return traces;
}
