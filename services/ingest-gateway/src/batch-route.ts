import type { Response, Router } from 'express';
import { BodyLimitHints, EventReasons, Headers, Limits, Messages, type RawLogMessage, type TopicSpec } from '@svc/contracts';
import { sealRawEvent, type SubjectKeys } from '@svc/identity';
import { BusUnavailableError, type Bus, type OutgoingMessage, type ProduceResult } from '@svc/bus';
import {
  HttpError,
  clientIp,
  isDatabaseUnavailable,
  methodNotAllowed,
  readJsonBody,
  rejectOversizedContentLength,
  sendJson,
  traceparentOf,
  TRACEPARENT_HEADER,
  type Logger,
} from '@svc/runtime';
import { KeyRequirements, authenticate, type AdmissionDeps, type RateLimiter, type RateLimitVerdict, type VerifiedKey } from '@svc/accounts';
import { batchRateRules, checkQuota, rateLimitError, type UsageReader } from './limits';
import { errorLines, prepareEvents, type EventFailure } from './prepare-events';
import type { GatewayMetrics } from './metrics';

export interface GatewayDeps extends AdmissionDeps {
  /** The shared counters (PostgreSQL). */
  rateLimiter: RateLimiter;
  /** Counts in this process while the shared counters cannot be reached. */
  fallbackRateLimiter: RateLimiter;
  readUsage: UsageReader;
  bus: Pick<Bus, 'produce'>;
  /** The data key of each anonymous id, which seals its events (crypto-shredding). */
  subjectKeys: Pick<SubjectKeys, 'forSubjects'>;
  /** The raw-events topic (names may carry a deployment prefix). */
  rawTopic: TopicSpec;
  upgradeUrl: string;
  metrics: GatewayMetrics;
  logger: Logger;
  now?: () => Date;
}

const LIMIT = Limits.batchBodyBytes;

/** Mounts POST /v1-batch (and 405 for every other method but OPTIONS) on `router`. */
export function mountBatchRoute(router: Router, deps: GatewayDeps): void {
  const now = deps.now ?? (() => new Date());
  router.post('/v1-batch', rejectOversizedContentLength(LIMIT, BodyLimitHints.batch), async (req, res) => {
    const started = performance.now();
    const ip = clientIp(req, deps.trustedProxies);

    // 1. Authentication (and the key's type and allowlists).
    const request = { headers: req.headers, clientIp: ip };
    const admission: Admission = {
      key: await authenticate(request, deps.keys, KeyRequirements.write, { throttle: deps.failedAuth }),
      reauthenticate: () => authenticate(request, deps.keys, KeyRequirements.write, { fresh: true }),
    };

    // 2. Batch shape: Content-Type, size while streaming, JSON, the batch array.
    const batch = await refusingUnconfirmedKeyFirst(admission, async () => {
      const body = await readJsonBody(req, { limitBytes: LIMIT, hint: BodyLimitHints.batch });
      const events = (body as { batch?: unknown } | null)?.batch;
      if (typeof body !== 'object' || body === null || !Array.isArray(events)) {
        throw new HttpError(400, Messages.batchRequired);
      }
      if (events.length > Limits.batchMaxEvents) throw new HttpError(400, Messages.batchTooLarge);
      return events;
    });

    await ingestBatch(deps, { ...admission, ip, batch, started, receivedAt: now() }, res);
  });
  router.all('/v1-batch', methodNotAllowed(['POST']));
}

/** An authenticated request's key, and how to authenticate the request again from the database. */
export interface Admission {
  /** Maybe `unconfirmed` (a cache served it): the rate-limit step confirms it. */
  key: VerifiedKey;
  /** Authenticates the request again from the database: 401 or 403 if the key no longer may make it. */
  reauthenticate: () => Promise<VerifiedKey>;
}

/**
 * Runs a step that may refuse the request; before a refusal goes out on a
 * key a cache served, the key is read again, so a key revoked or changed
 * since is refused as authentication says (401 or 403) rather than for the
 * request's other faults.
 */
export async function refusingUnconfirmedKeyFirst<T>({ key, reauthenticate }: Admission, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (key.unconfirmed) await reauthenticate();
    throw err;
  }
}

/** An authenticated request whose body held a batch of at most 100 events. */
export interface AdmittedBatch extends Admission {
  ip: string;
  batch: readonly unknown[];
  /** performance.now() when the request arrived, for duration_ms. */
  started: number;
  receivedAt: Date;
}

/**
 * Steps 3 to 5 of POST /v1-batch and its answer: rate limits, plan quota,
 * per-event validation, produce with per-event refusal, metrics, the 200.
 * The Segment-compatible routes share it, so every way in obeys one set of rules.
 */
export async function ingestBatch(deps: GatewayDeps, admitted: AdmittedBatch, res: Response): Promise<void> {
  const { ip, batch, started, receivedAt } = admitted;
  // 3. Rate limits, shared by every replica, and the key confirmed unchanged if a cache served it.
  const key = await checkRateLimits(deps, admitted, res);

  // 4. Plan state and monthly quota.
  const overQuota = await checkQuota(key, deps.readUsage, receivedAt, deps.upgradeUrl);
  if (overQuota) {
    deps.metrics.rejectedRequests.inc({ limit: overQuota.status === 503 ? 'usage_unavailable' : 'quota' });
    throw overQuota;
  }

  // 5. Per-event validation, then into the log before we answer.
  const requestId = String(res.locals.requestId ?? '');
  const prepared = prepareEvents(batch, { orgId: key.orgId, requestId, clientIp: ip, receivedAt });
  const failures: EventFailure[] = [...prepared.failures];
  let processed = 0;
  if (prepared.events.length > 0) {
    const messages = await sealedMessages(deps, key.orgId, prepared.events, traceparentOf(res.locals.span));
    const timer = deps.metrics.produceSeconds.startTimer();
    let results;
    try {
      results = await produceEachAlone(deps, messages);
    } catch (err) {
      if (err instanceof BusUnavailableError) throw unavailable(err);
      throw err;
    } finally {
      timer();
    }
    results.forEach((result, i) => {
      const event = prepared.events[i]!;
      if (result.ok) processed++;
      else failures.push({ index: event.index, label: event.envelope.event.messageId, reason: EventReasons.insertFailed });
    });
  }

  record(deps, prepared, failures, processed, batch.length, res.locals.log ?? deps.logger);
  res.locals.span?.setAttributes({ 'svc.org_id': key.orgId, 'svc.events.accepted': processed, 'svc.events.refused': failures.length });
  if (key.planState === 'grace') res.setHeader(Headers.quotaStatus, 'grace');
  const duration_ms = Math.round(performance.now() - started);
  sendJson(
    res,
    200,
    failures.length === 0
      ? { success: true, processed, failed: 0, duration_ms }
      : { success: false, processed, failed: failures.length, errors: errorLines(failures), duration_ms },
  );
}

/**
 * The events as the log keeps them: each sealed under its anonymous id's
 * data key, keyed by that key's id (opaque; one key per anonymous id, so a
 * visitor's events keep their partition and order). Without a key an event
 * cannot be written so that it can be read (the database is down and the
 * key was never held here): the request gets the log-down 503, and the
 * client sends it again.
 */
async function sealedMessages(
  deps: GatewayDeps,
  orgId: string,
  events: ReturnType<typeof prepareEvents>['events'],
  traceparent: string | undefined,
): Promise<Array<OutgoingMessage<RawLogMessage>>> {
  let keys;
  try {
    keys = await deps.subjectKeys.forSubjects(
      orgId,
      events.map((e) => e.envelope.event.anonymousId),
    );
  } catch (err) {
    if (isDatabaseUnavailable(err)) throw unavailable(err);
    throw err;
  }
  // No headers but the request's trace context when tracing is on: the envelope carries the request id, and kafkajs
  // spends a buffer of its own on each header.
  const headers = traceparent === undefined ? undefined : { [TRACEPARENT_HEADER]: traceparent };
  return events.map(({ envelope }) => {
    const dataKey = keys.get(envelope.event.anonymousId)!;
    return { key: `${orgId}:${dataKey.id}`, value: sealRawEvent(envelope, dataKey), ...(headers ? { headers } : {}) };
  });
}

function unavailable(cause: unknown): HttpError {
  return new HttpError(503, Messages.serviceUnavailable, {
    headers: { [Headers.retryAfter]: String(Limits.retryAfterUnavailableSeconds) },
    cause,
  });
}

/**
 * Step 3: the request counted against its rate limits; a 429 for the first
 * broken rule. A key a cache served is confirmed unchanged in the same
 * statement; one that changed is read again (401 or 403 if it may no longer
 * make the request, else it is counted afresh). If the shared counters
 * cannot be reached (the database is down or failing over), the request is
 * counted in this process instead (`fallbackRateLimiter`), since refusing
 * ingestion over a limiter outage loses data; a key not confirmed is read
 * again first, which the key cache answers through an outage for a key the
 * database confirmed recently.
 */
async function checkRateLimits(deps: GatewayDeps, { key: admittedKey, reauthenticate, ip, receivedAt }: AdmittedBatch, res: Response): Promise<VerifiedKey> {
  let key = admittedKey;
  let verdicts: RateLimitVerdict[] | undefined;
  try {
    if (key.unconfirmed && deps.rateLimiter.hitIf) {
      verdicts = await deps.rateLimiter.hitIf(batchRateRules(key, ip), key.unconfirmed, receivedAt);
      if (verdicts) deps.keys.confirmed?.(key);
    }
    if (!verdicts) {
      if (key.unconfirmed) key = await reauthenticate();
      verdicts = await deps.rateLimiter.hit(batchRateRules(key, ip), receivedAt);
    }
  } catch (err) {
    if (err instanceof HttpError) throw err;
    if (key.unconfirmed) key = await reauthenticate();
    if (key.servedThroughOutage) deps.metrics.outageAdmissions.inc();
    deps.metrics.rateLimitFallbacks.inc();
    res.locals.log?.warn({ err }, 'rate limiter unavailable; counted in this process');
    verdicts = await deps.fallbackRateLimiter.hit(batchRateRules(key, ip), receivedAt);
  }
  const limited = rateLimitError(verdicts);
  if (limited) {
    deps.metrics.rejectedRequests.inc({ limit: limited.code ? 'per_ip' : 'per_org' });
    throw limited;
  }
  return key;
}

/**
 * Produces a request's events, and makes every refusal a refusal of one
 * event. The bus reports per message, but some refusals cover more than the
 * message to blame: its schema check refuses the whole call, the Postgres
 * log stores a call in one statement (all or nothing), a Kafka request fails
 * as one. So when two or more events are refused for any reason but the log
 * being unreachable, each is produced again on its own, one after the
 * other, and only an event refused alone is reported failed. Rare, so the
 * extra round trips cost nothing in the common case.
 */
async function produceEachAlone(
  deps: GatewayDeps,
  messages: ReadonlyArray<OutgoingMessage<RawLogMessage>>,
): Promise<ProduceResult[]> {
  let results: ProduceResult[];
  try {
    results = await deps.bus.produce(deps.rawTopic, messages);
  } catch (err) {
    if (err instanceof BusUnavailableError) throw err;
    const error = err instanceof Error ? err : new Error(String(err));
    results = messages.map(() => ({ ok: false, error }));
  }
  const refused = results.flatMap((r, i) => (r.ok ? [] : [i]));
  if (refused.length < 2) return results;
  deps.logger.warn({ err: (results[refused[0]!] as { error: Error }).error, refused: refused.length }, 'gateway: the log refused several events at once; producing each alone');
  for (const i of refused) {
    try {
      results[i] = (await deps.bus.produce(deps.rawTopic, [messages[i]!]))[0] ?? results[i]!;
    } catch (err) {
      // Unreachable now: what is left stays refused (the client retries it; messageId makes that safe).
      if (err instanceof BusUnavailableError) break;
      results[i] = { ok: false, error: err instanceof Error ? err : new Error(String(err)) };
    }
  }
  return results;
}

function record(
  deps: GatewayDeps,
  prepared: ReturnType<typeof prepareEvents>,
  failures: readonly EventFailure[],
  processed: number,
  size: number,
  log: Logger,
): void {
  const m = deps.metrics;
  m.batchSize.observe(size);
  m.eventsAccepted.inc(processed);
  for (const f of failures) m.eventsRejected.inc({ reason: reasonLabel(f.reason) });
  if (prepared.clampedTimestamps) m.timestampsClamped.inc(prepared.clampedTimestamps);
  for (const w of prepared.warnings) m.softCapWarnings.inc({ cap: w.breach, field: w.field });
  if (prepared.warnings.length) {
    log.warn({ warnings: prepared.warnings }, 'events stored despite breaking soft caps');
  }
}

/** `Invalid event type: <anything>` would make the label unbounded; keep its stem only. */
function reasonLabel(reason: string): string {
  return reason.startsWith('Invalid event type:') ? 'Invalid event type' : reason;
}

