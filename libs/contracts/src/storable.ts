import { Limits } from './limits';

/**
 * What every store and encoder downstream can hold. PostgreSQL's jsonb
 * refuses U+0000 and a lone UTF-16 surrogate (JSON.stringify writes one as
 * `\ud800`, which jsonb rejects), so one such character would fail the write
 * of every event stored with it; and JSON.stringify, pg and jsonb recurse per
 * level of nesting, so a body of a million `[` (well within 1 MiB) would
 * overflow their stacks.
 */
export type Storable<T> = { ok: true; value: T } | { ok: false; tooDeep: true };

/**
 * Returns the value ready to store: U+0000 removed and lone surrogates
 * replaced by U+FFFD, in keys and string values; nothing else changes, and
 * the input itself comes back when there is nothing to repair (the common
 * case allocates nothing but the walk's stack). Refuses a value nested
 * deeper than Limits.maxNestingDepth.
 */
export function toStorable<T>(value: T): Storable<T> {
  const found = inspect(value);
  if (found === 'too_deep') return { ok: false, tooDeep: true };
  return { ok: true, value: found === 'repair' ? (repair(value) as T) : value };
}

const needsRepair = (s: string): boolean => s.includes('\u0000') || !s.isWellFormed();
const repairString = (s: string): string => s.replaceAll('\u0000', '').toWellFormed();

/** One iterative walk (no recursion, so no stack to overflow, whatever the input). */
function inspect(root: unknown): 'clean' | 'repair' | 'too_deep' {
  let verdict: 'clean' | 'repair' = 'clean';
  // Two parallel stacks (values and their depths) rather than one of pairs: no allocation per node.
  const values: unknown[] = [root];
  const depths: number[] = [0];
  while (values.length > 0) {
    const value = values.pop();
    const depth = depths.pop() as number;
    if (typeof value === 'string') {
      if (verdict === 'clean' && needsRepair(value)) verdict = 'repair';
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= Limits.maxNestingDepth) return 'too_deep';
    if (Array.isArray(value)) {
      for (const item of value as unknown[]) {
        values.push(item);
        depths.push(depth + 1);
      }
      continue;
    }
    // A parsed JSON object: own, enumerable keys only (its prototype has none).
    const record = value as Record<string, unknown>;
    for (const key in record) {
      if (verdict === 'clean' && needsRepair(key)) verdict = 'repair';
      values.push(record[key]);
      depths.push(depth + 1);
    }
  }
  return verdict;
}

/** Recursion is safe here: inspect() has bounded the depth. Object.fromEntries keeps `__proto__` an own key. */
function repair(value: unknown): unknown {
  if (typeof value === 'string') return repairString(value);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(repair);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [repairString(k), repair(v)]));
}
