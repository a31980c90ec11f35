import { DEFAULT_ENGAGEMENT_RULES, type EngagementCondition, type EngagementRules } from '@svc/contracts';

/**
 * Engagement scoring, pure: the points one prepared event earns under its
 * organisation's rules, and the decay arithmetic shared with the SQL function
 * `identity.engagement_decay` (migration 0002).
 *
 * A profile's score is kept as `(engagement_score, engagement_updated_at)`:
 * the score as of that instant R. Under a half-life h an event at time t
 * with points p gives
 *
 *   R' = max(R, t)
 *   S' = S·2^(−(R'−R)/h) + p·2^(−(R'−t)/h)
 *
 * which is Σ pᵢ·2^(−(R'−tᵢ)/h) over every scored event: the same whatever
 * the order the events arrive in, how they are batched, or which profiles
 * they were on before a merge (a merge combines two states the same way).
 * Read, the score is decayed from R to now. t is the event's time (its
 * timestamp, but never later than when the gateway received it), so a replay
 * scores exactly as the first run did and a late event counts as old
 * activity.
 */

/** Past this many half-lives a score is 0 (also keeps PostgreSQL's float arithmetic away from underflow). */
export const MAX_HALF_LIVES = 60;
/** A decayed score of smaller magnitude is 0. */
export const NEGLIGIBLE_SCORE = 1e-9;
const DAY_MS = 86_400_000;

/** The rules of one organisation, indexed for scoring. */
export interface CompiledEngagementRules {
  byEvent: ReadonlyMap<string, ReadonlyArray<{ points: number; where: readonly EngagementCondition[] }>>;
  /** null: the score never decays. */
  halfLifeDays: number | null;
}

/** Indexes a checked rules document (see checkEngagementRules) by event name. */
export function compileEngagementRules(doc: EngagementRules): CompiledEngagementRules {
  const byEvent = new Map<string, Array<{ points: number; where: readonly EngagementCondition[] }>>();
  for (const r of doc.rules) {
    const list = byEvent.get(r.event) ?? [];
    list.push({ points: r.points, where: r.where ?? [] });
    byEvent.set(r.event, list);
  }
  return { byEvent, halfLifeDays: doc.decay?.half_life_days ?? null };
}

/** The default rule set (no configured document): nothing earns points, nothing decays. */
export const DEFAULT_COMPILED_RULES: CompiledEngagementRules = compileEngagementRules(DEFAULT_ENGAGEMENT_RULES);

/** The value at a dotted path of `properties`, walking own keys of plain objects only; undefined when absent. */
export function propertyAt(properties: Record<string, unknown>, path: string): unknown {
  let value: unknown = properties;
  for (const key of path.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

const DECIMAL = /^-?\d{1,15}(?:\.\d{1,15})?$/;

/** A number, or a plain decimal string (`"49.50"`, as tag managers send values); else undefined. */
function numeric(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && DECIMAL.test(v)) return Number(v);
  return undefined;
}

/** Same JSON type and value. */
const same = (a: unknown, b: unknown): boolean => a !== undefined && a === b;

export function conditionHolds(c: EngagementCondition, properties: Record<string, unknown>): boolean {
  const v = propertyAt(properties, c.property);
  switch (c.op) {
    case 'eq':
      return same(v, c.value);
    case 'neq':
      return !same(v, c.value);
    case 'in':
      return c.value.some((x) => same(v, x));
    case 'exists':
      return (v !== undefined && v !== null) === (c.value ?? true);
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const n = numeric(v);
      if (n === undefined) return false;
      if (c.op === 'gt') return n > c.value;
      if (c.op === 'gte') return n >= c.value;
      if (c.op === 'lt') return n < c.value;
      return n <= c.value;
    }
  }
}

/** The points an event earns: the sum over every rule of its name whose conditions all hold (0 when none). */
export function eventPoints(rules: CompiledEngagementRules, eventName: string, properties: Record<string, unknown>): number {
  let points = 0;
  for (const r of rules.byEvent.get(eventName) ?? []) {
    if (r.where.every((c) => conditionHolds(c, properties))) points += r.points;
  }
  return points;
}

/** When an event scores: its timestamp, but never later than its arrival at the gateway. */
export function scoringTime(timestamp: string, receivedAt: string): string {
  return Date.parse(timestamp) <= Date.parse(receivedAt) ? timestamp : receivedAt;
}

/**
 * `score` as of `since`, decayed to `until` (ms since the epoch) under
 * `halfLifeDays`. Unchanged without decay, without `since`, or when `until`
 * is not later; 0 past MAX_HALF_LIVES or below NEGLIGIBLE_SCORE. Exactly what
 * the SQL function identity.engagement_decay computes.
 */
export function decayScore(score: number, since: number | null, until: number, halfLifeDays: number | null): number {
  if (score === 0 || halfLifeDays === null || since === null || until <= since) return score;
  const halfLives = (until - since) / (halfLifeDays * DAY_MS);
  if (halfLives > MAX_HALF_LIVES || Math.abs(score) < NEGLIGIBLE_SCORE) return 0;
  const decayed = score * 2 ** -halfLives;
  return Math.abs(decayed) < NEGLIGIBLE_SCORE ? 0 : decayed;
}

/** A score as of an instant (ISO 8601); `at` null: never scored. */
export interface EngagementState {
  score: number;
  at: string | null;
}

/** Two states (a profile's and an event's points, or two merged profiles') as one, as of the later instant. */
export function combineEngagement(a: EngagementState, b: EngagementState, halfLifeDays: number | null): EngagementState {
  const ta = a.at === null ? null : Date.parse(a.at);
  const tb = b.at === null ? null : Date.parse(b.at);
  if (ta === null && tb === null) return { score: a.score + b.score, at: null };
  const at = ta === null || (tb !== null && tb > ta) ? b.at! : a.at!;
  const until = Date.parse(at);
  return { score: decayScore(a.score, ta, until, halfLifeDays) + decayScore(b.score, tb, until, halfLifeDays), at };
}
