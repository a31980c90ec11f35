import type { Db } from '../db/db';

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
}

const WINDOW_MS = 60_000;

/**
 * Fixed one-minute windows counted in PostgreSQL, so every replica of every
 * service shares them. One round trip per request, whatever the number of rules.
 */
export class PostgresRateLimiter implements RateLimiter {
  private lastSweep = 0;

  constructor(private readonly db: Db) {}

  async hit(rules: readonly RateLimitRule[], now = new Date()): Promise<RateLimitVerdict[]> {
    if (rules.length === 0) return [];
    const windowStart = Math.floor(now.getTime() / WINDOW_MS) * WINDOW_MS;
    const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + WINDOW_MS - now.getTime()) / 1000));
    const buckets = rules.map((r) => r.bucket);
    const { rows } = await this.db.raw<{ rows: Array<{ bucket: string; hits: number }> }>(
      `insert into ratelimit.counters as c (bucket, window_start, hits)
         select b, ?, 1 from unnest(?::text[]) as b
       on conflict (bucket, window_start) do update set hits = c.hits + 1
       returning bucket, hits`,
      [new Date(windowStart), buckets],
    );
    const hitsByBucket = new Map(rows.map((r) => [r.bucket, r.hits]));
    this.sweepOccasionally(now.getTime());
    return rules.map((rule) => {
      const hits = hitsByBucket.get(rule.bucket) ?? 1;
      return {
        rule,
        hits,
        allowed: hits <= rule.limit,
        remaining: Math.max(0, rule.limit - hits),
        retryAfterSeconds,
      };
    });
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
