/**
 * PostgreSQL's jsonb cannot hold U+0000, so one such character would fail the
 * write of every event stored with it. The gateway removes it from keys and
 * string values; nothing else about the event changes. Returns the input
 * itself when there is nothing to remove (the common case allocates nothing).
 */
export function withoutNulChars<T>(value: T): T {
  return hasNul(value) ? (strip(value) as T) : value;
}

function hasNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) if (hasNul(item)) return true;
    return false;
  }
  // Runs on every event: a for-in over a parsed JSON object (own, enumerable
  // keys only; its prototype has none) allocates nothing, unlike Object.entries.
  const record = value as Record<string, unknown>;
  for (const k in record) if (k.includes('\u0000') || hasNul(record[k])) return true;
  return false;
}

function strip(value: unknown): unknown {
  if (typeof value === 'string') return value.replaceAll('\u0000', '');
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(strip);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.replaceAll('\u0000', ''), strip(v)]));
}
