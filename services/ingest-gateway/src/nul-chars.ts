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
  if (Array.isArray(value)) return value.some(hasNul);
  for (const [k, v] of Object.entries(value)) if (k.includes('\u0000') || hasNul(v)) return true;
  return false;
}

function strip(value: unknown): unknown {
  if (typeof value === 'string') return value.replaceAll('\u0000', '');
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(strip);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.replaceAll('\u0000', ''), strip(v)]));
}
