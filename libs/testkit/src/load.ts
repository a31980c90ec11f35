/**
 * A bounded load driver for POST /functions/v1/v1-batch: `clients` concurrent
 * clients, each posting batches of `batchSize` events with unique messageIds,
 * paced together at `eventsPerSecond`, until stopped or until `maxSeconds`
 * (or `maxRequests`) is reached, whichever comes first. No retries: every
 * request is recorded as it ended (status, Retry-After present or not,
 * start and end times), and every event a 200 acknowledged is remembered.
 */

export interface LoadOptions {
  /** The gateway's origin, http://127.0.0.1:<port>, or an edge's base origin. */
  gateway: string;
  /** How requests are made; default the global fetch (an edge over TLS with a private CA passes one with its own agent). */
  fetch?: typeof fetch;
  /** Write keys, used in turn (one request, one key), to stay under the per-organisation rate limits. */
  keys: readonly string[];
  clients: number;
  batchSize: number;
  /** Target rate over all clients together. */
  eventsPerSecond: number;
  /** Hard bound on the run. */
  maxSeconds: number;
  /** Hard bound on requests (all clients). */
  maxRequests: number;
  /** A request that has no answer after this long is abandoned and counted as a hang. */
  requestTimeoutMs: number;
  /** Unique per run: every messageId starts with it. */
  idPrefix: string;
  /** Distinct anonymousIds per key (profiles the events resolve to). */
  anonymousIdsPerKey?: number;
}

export type Outcome = number | 'hang' | 'network-error';

export interface RequestRecord {
  client: number;
  /** Epoch milliseconds. */
  start: number;
  end: number;
  outcome: Outcome;
  retryAfter: boolean;
  /** The batch's messageIds. */
  messageIds: string[];
  /** processed, from a 200's body. */
  processed: number;
  /** The messageIds this answer acknowledged (a 200: all but those it names as failed). */
  acknowledged: string[];
  /**
   * A 200 that reported more failures than it named (it names at most 10):
   * which of its events were stored is unknown; `processed` of them must be.
   */
  ambiguous: boolean;
  /** For an answer that did not acknowledge everything: its first error line, or the start of its body. */
  detail?: string;
}

export interface LoadCounts {
  requests: number;
  ok: number;
  /** 200s that reported some events refused. */
  okPartial: number;
  unavailable: number;
  unavailableWithRetryAfter: number;
  /** 500 and every 5xx but 503. */
  otherServerErrors: number;
  /** Every other status (4xx: a 429 would mean the driver broke the rate limits). */
  otherStatuses: number;
  hangs: number;
  networkErrors: number;
  sentEvents: number;
  acknowledgedEvents: number;
}

export interface LoadResult {
  startedAt: number;
  stoppedAt: number;
  records: RequestRecord[];
  counts: LoadCounts;
  /** Every messageId sent. */
  sent: Set<string>;
  /** Every messageId a 200 acknowledged. */
  acknowledged: Set<string>;
  /** Cumulative acknowledged events over time, at each acknowledging request's end: [epoch ms, total]. */
  ackTimeline: Array<[number, number]>;
}

export interface LoadRun {
  /** Live view of the counts so far. */
  counts(): LoadCounts;
  /** Records of the requests that ended so far. */
  records(): readonly RequestRecord[];
  /** Asks every client to finish its current request and stop; resolves with the result. */
  stop(): Promise<LoadResult>;
  /** Resolves when the run ends on its own (a bound) or after stop(). */
  done: Promise<LoadResult>;
}

interface BatchAnswer {
  success?: boolean;
  processed?: number;
  failed?: number;
  errors?: string[];
}

export function emptyCounts(): LoadCounts {
  return {
    requests: 0,
    ok: 0,
    okPartial: 0,
    unavailable: 0,
    unavailableWithRetryAfter: 0,
    otherServerErrors: 0,
    otherStatuses: 0,
    hangs: 0,
    networkErrors: 0,
    sentEvents: 0,
    acknowledgedEvents: 0,
  };
}

/** Adds one ended request to the counts. */
export function count(counts: LoadCounts, r: RequestRecord): void {
  counts.requests++;
  counts.sentEvents += r.messageIds.length;
  counts.acknowledgedEvents += r.acknowledged.length;
  if (r.outcome === 'hang') counts.hangs++;
  else if (r.outcome === 'network-error') counts.networkErrors++;
  else if (r.outcome === 200) {
    counts.ok++;
    if (r.acknowledged.length < r.messageIds.length) counts.okPartial++;
  } else if (r.outcome === 503) {
    counts.unavailable++;
    if (r.retryAfter) counts.unavailableWithRetryAfter++;
  } else if (r.outcome >= 500) counts.otherServerErrors++;
  else counts.otherStatuses++;
}

/**
 * Which events a 200 acknowledged: all when nothing failed; otherwise all
 * but those its `errors` name (`<messageId>: <reason>`), provided it names
 * every failure; when it names fewer (at most 10 are listed), none can be
 * attributed and the answer is ambiguous.
 */
export function acknowledgedBy(messageIds: readonly string[], body: BatchAnswer): { acknowledged: string[]; ambiguous: boolean } {
  const failed = body.failed ?? 0;
  if (failed === 0 && body.processed === messageIds.length) return { acknowledged: [...messageIds], ambiguous: false };
  // Our messageIds hold no ': ', so the first one ends the label.
  const named = new Set((body.errors ?? []).map((line) => line.slice(0, line.indexOf(': '))));
  if (named.size < failed) return { acknowledged: [], ambiguous: (body.processed ?? 0) > 0 };
  const acknowledged = messageIds.filter((id) => !named.has(id));
  // A body that contradicts itself acknowledges nothing we can rely on.
  if (acknowledged.length !== body.processed) return { acknowledged: [], ambiguous: (body.processed ?? 0) > 0 };
  return { acknowledged, ambiguous: false };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

export function startLoad(o: LoadOptions): LoadRun {
  const startedAt = Date.now();
  const deadline = startedAt + o.maxSeconds * 1000;
  const records: RequestRecord[] = [];
  const counts = emptyCounts();
  const sent = new Set<string>();
  const acknowledged = new Set<string>();
  const ackTimeline: Array<[number, number]> = [];
  const anonymousIds = o.anonymousIdsPerKey ?? 50;
  let stopping = false;
  let issued = 0;
  let wakeUp: (() => void) | undefined;
  const stopped = new Promise<void>((resolve) => (wakeUp = resolve));
  // Each client starts a request every `interval` ms (together: eventsPerSecond).
  const interval = (o.clients * o.batchSize * 1000) / o.eventsPerSecond;

  const client = async (c: number) => {
    // Spread the clients' first requests over one interval.
    let next = Date.now() + (interval * c) / o.clients;
    for (;;) {
      await Promise.race([sleep(next - Date.now()), stopped]);
      if (stopping || Date.now() >= deadline || issued >= o.maxRequests) return;
      const seq = issued++;
      const keyIndex = seq % o.keys.length;
      const at = new Date().toISOString();
      const messageIds = Array.from({ length: o.batchSize }, (_, i) => `${o.idPrefix}-${c}-${seq}-${i}`);
      const batch = messageIds.map((messageId) => ({
        type: 'track',
        event: 'reliability',
        messageId,
        anonymousId: `anon-${keyIndex}-${Math.floor(Math.random() * anonymousIds)}`,
        timestamp: at,
        properties: { seq },
      }));
      for (const id of messageIds) sent.add(id);
      const start = Date.now();
      const record: RequestRecord = { client: c, start, end: start, outcome: 'network-error', retryAfter: false, messageIds, processed: 0, acknowledged: [], ambiguous: false };
      try {
        const res = await (o.fetch ?? fetch)(`${o.gateway}/functions/v1/v1-batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${o.keys[keyIndex]}`, 'content-type': 'application/json' },
          body: JSON.stringify({ batch }),
          signal: AbortSignal.timeout(o.requestTimeoutMs),
        });
        record.retryAfter = res.headers.has('retry-after');
        const text = await res.text();
        record.outcome = res.status;
        if (res.status === 200) {
          const body = JSON.parse(text) as BatchAnswer;
          record.processed = body.processed ?? 0;
          Object.assign(record, acknowledgedBy(messageIds, body));
          if (record.acknowledged.length < messageIds.length) record.detail = `${body.processed}/${messageIds.length} processed; ${body.errors?.[0] ?? ''}`;
        } else {
          record.detail = text.slice(0, 300);
        }
      } catch (err) {
        const name = (err as { name?: string }).name;
        record.outcome = name === 'TimeoutError' || name === 'AbortError' ? 'hang' : 'network-error';
        record.detail = String((err as Error).message ?? err);
      }
      record.end = Date.now();
      records.push(record);
      count(counts, record);
      if (record.acknowledged.length > 0) {
        for (const id of record.acknowledged) acknowledged.add(id);
        ackTimeline.push([record.end, acknowledged.size]);
      }
      next = Math.max(next + interval, Date.now());
    }
  };

  const finished = Promise.all(Array.from({ length: o.clients }, (_, c) => client(c)));
  const done = finished.then(
    (): LoadResult => ({ startedAt, stoppedAt: Date.now(), records, counts, sent, acknowledged, ackTimeline }),
  );
  return {
    counts: () => ({ ...counts }),
    records: () => records,
    done,
    async stop() {
      stopping = true;
      wakeUp?.();
      return done;
    },
  };
}

/**
 * Requests that started at or after `from` and ended at or before `to`: those
 * wholly inside a window, whose answers cannot have been decided before it
 * began or after it ended.
 */
export function within(records: readonly RequestRecord[], from: number, to: number): RequestRecord[] {
  return records.filter((r) => r.start >= from && r.end <= to);
}

/** The distinct answers that did not acknowledge everything, most frequent first: "<outcome> <detail> ×<n>". */
export function unacknowledgedAnswers(records: readonly RequestRecord[], limit = 5): string[] {
  const byKind = new Map<string, number>();
  for (const r of records) {
    if (r.acknowledged.length === r.messageIds.length) continue;
    // Messageids and request ids vary: keep the shape of the answer.
    const kind = `${r.outcome} ${(r.detail ?? '').replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').replace(/rel[0-9a-f]{6}\.\S+/g, '<messageId>')}`;
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
  }
  return [...byKind].sort((a, b) => b[1] - a[1]).slice(0, limit).map(([k, n]) => `${k} ×${n}`);
}

/** Longest stretch of the run in which no request ended with a 200 (seconds). */
export function longestGapWithoutOk(result: LoadResult): number {
  const oks = result.records
    .filter((r) => r.outcome === 200 && r.acknowledged.length > 0)
    .map((r) => r.end)
    .sort((a, b) => a - b);
  let gap = 0;
  let prev = result.startedAt;
  for (const t of [...oks, result.stoppedAt]) {
    gap = Math.max(gap, t - prev);
    prev = t;
  }
  return gap / 1000;
}
