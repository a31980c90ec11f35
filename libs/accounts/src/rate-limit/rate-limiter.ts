import { preparedRaw, type Db, type SqlCondition } from '@svc/runtime';

/** One limit to enforce: at most `limit` hits per minute on `bucket`. */
export interface RateLimitRule {
  bucket: string;
  limit: number;
}

export interface RateLimitVerdict {
  rule: RateLimitRule;
  hits: number;
  allowed: boolean;
  remaining: number;
  /** Seconds until the current one-minute window ends (at least 1). */
  retryAfterSeconds: number;
}

/** The port the HTTP edge uses; PostgresRateLimiter is the product's, tests may pass a double. */
export interface RateLimiter {
  /** Counts one hit on every rule's bucket and returns each rule's verdict, in order. */
  hit(rules: readonly RateLimitRule[], now?: Date): Promise<RateLimitVerdict[]>;
  /**
   * hit, in the same statement as a check that `condition` holds, counting
   * nothing when it does not (then undefined): one round trip where a
   * request has both to confirm and to count.
   */
  hitIf?(rules: readonly RateLimitRule[], condition: SqlCondition, now?: Date): Promise<RateLimitVerdict[] | undefined>;
}

const WINDOW_MS = 60_000;

/** Counts one hit on each bucket (`?` the window's start, `?` the buckets), `where` allowing, and returns the counts. */
const countHits = (where: string) => `insert into ratelimit.counters as c (bucket, window_start, hits)
         select b, ?, 1 from unnest(?::text[]) as b ${where}
       on conflict (bucket, window_start) do update set hits = c.hits + 1
       returning bucket, hits`;
const COUNT_HITS = countHits('');
/** Inside hitIf's statement: counts only while its `holds` part returns a row. */
const COUNT_HITS_IF_HOLDS = countHits('where exists (select 1 from holds)');

/** The fixed one-minute window `now` falls in. */
function windowOf(now: Date): { start: Date; retryAfterSeconds: number } {
  const start = Math.floor(now.getTime() / WINDOW_MS) * WINDOW_MS;
  return { start: new Date(start), retryAfterSeconds: Math.max(1, Math.ceil((start + WINDOW_MS - now.getTime()) / 1000)) };
}

/** Each rule's verdict, in order, from its bucket's count. */
function verdicts(rules: readonly RateLimitRule[], counted: ReadonlyArray<{ bucket: string; hits: number }>, retryAfterSeconds: number): RateLimitVerdict[] {
  const hitsByBucket = new Map(counted.map((r) => [r.bucket, r.hits]));
  return rules.map((rule) => {
    const hits = hitsByBucket.get(rule.bucket) ?? 1;
    return { rule, hits, allowed: hits <= rule.limit, remaining: Math.max(0, rule.limit - hits), retryAfterSeconds };
  });
}

/**
 * Fixed one-minute windows counted in PostgreSQL, so every replica of every
 * service shares them. One round trip per request, whatever the number of rules.
 */
export class PostgresRateLimiter implements RateLimiter {
  private lastSweep = 0;

  constructor(private readonly db: Db) {}

  async hit(rules: readonly RateLimitRule[], now = new Date()): Promise<RateLimitVerdict[]> {
    if (rules.length === 0) return [];
    const window = windowOf(now);
    const { rows } = await preparedRaw<{ rows: Array<{ bucket: string; hits: number }> }>(this.db, COUNT_HITS, [
      window.start,
      rules.map((r) => r.bucket),
    ]);
    this.sweepOccasionally(now.getTime());
    return verdicts(rules, rows, window.retryAfterSeconds);
  }

  async hitIf(rules: readonly RateLimitRule[], condition: SqlCondition, now = new Date()): Promise<RateLimitVerdict[] | undefined> {
    const window = windowOf(now);
    const { rows } = await preparedRaw<{ rows: Array<{ holds: boolean; hits: Array<{ bucket: string; hits: number }> }> }>(
      this.db,
      `with holds as (${condition.sql}),
       counted as (${COUNT_HITS_IF_HOLDS})
       select exists (select 1 from holds) as holds, coalesce((select json_agg(json_build_object('bucket', bucket, 'hits', hits)) from counted), '[]') as hits`,
      [...condition.bindings, window.start, rules.map((r) => r.bucket)],
    );
    if (!rows[0]?.holds) return undefined;
    this.sweepOccasionally(now.getTime());
    return verdicts(rules, rows[0].hits, window.retryAfterSeconds);
  }

  /** Old windows are dead weight; one replica deleting them now and then is plenty. */
  private sweepOccasionally(nowMs: number): void {
    if (nowMs - this.lastSweep < WINDOW_MS) return;
    this.lastSweep = nowMs;
    this.db
      .raw('delete from ratelimit.counters where window_start < ?', [new Date(nowMs - 2 * WINDOW_MS)])
      .catch(() => {
        // Best effort: a failed sweep is retried a minute later.
        this.lastSweep = 0;
      });
  }
}

/**
 * The same fixed one-minute windows, counted in this process: what a
 * service falls back to while the shared counters cannot be reached, so a
 * database outage suspends neither its limits nor its traffic. Each replica
 * counts alone, so n replicas allow up to n times a limit meanwhile.
 */
export class InProcessRateLimiter implements RateLimiter {
  private readonly counts = new Map<string, number>();
  private window = 0;

  hit(rules: readonly RateLimitRule[], now = new Date()): Promise<RateLimitVerdict[]> {
    const window = windowOf(now);
    // Only the current window is ever asked about: a new one starts from nothing.
    if (window.start.getTime() !== this.window) {
      this.window = window.start.getTime();
      this.counts.clear();
    }
    const counted = rules.map((rule) => {
      const hits = (this.counts.get(rule.bucket) ?? 0) + 1;
      this.counts.set(rule.bucket, hits);
      return { bucket: rule.bucket, hits };
    });
    return Promise.resolve(verdicts(rules, counted, window.retryAfterSeconds));
  }
}
