import { Limits } from './limits';

export type SoftCapBreach = 'too_many_keys' | 'value_too_large' | 'too_deep';

const { maxKeys, maxValueBytes, maxDepth } = Limits.softCaps;

/**
 * Which warn-only caps an object (properties or traits) breaks: more than 300
 * keys, a value over 32 KiB as JSON, or nesting deeper than 8. Never a reason
 * to reject: the gateway logs and counts the breach and stores the event, and
 * the identity resolver lists it among the organisation's ingestion warnings.
 */
export function softCapBreaches(value: Record<string, unknown> | undefined): SoftCapBreach[] {
  if (!value) return [];
  const breaches: SoftCapBreach[] = [];
  if (Object.keys(value).length > maxKeys) breaches.push('too_many_keys');
  // Cheap pre-checks: a value cannot exceed 32 KiB of JSON unless the whole object does,
  // and most objects are far smaller than that (a bound on their JSON needs no JSON).
  if (jsonBytesAtMost(value, maxValueBytes) === undefined && JSON.stringify(value).length > maxValueBytes) {
    for (const v of Object.values(value)) {
      if (Buffer.byteLength(JSON.stringify(v) ?? '') > maxValueBytes) {
        breaches.push('value_too_large');
        break;
      }
    }
  }
  if (depthExceeds(value, maxDepth)) breaches.push('too_deep');
  return breaches;
}

/**
 * An upper bound of the UTF-8 bytes of `JSON.stringify(value)` when it is at
 * most `limit`, else undefined (also for anything it does not know how to
 * bound, such as an object with `toJSON`). Every UTF-16 unit of a string
 * becomes at most 6 bytes (`\uXXXX`); a number at most 25 characters.
 * Runs on every event's properties and traits, so it allocates nothing.
 */
function jsonBytesAtMost(value: unknown, limit: number): number | undefined {
  switch (typeof value) {
    case 'string':
      return value.length * 6 + 2 <= limit ? value.length * 6 + 2 : undefined;
    case 'number':
      return 25 <= limit ? 25 : undefined;
    case 'boolean':
      return 5 <= limit ? 5 : undefined;
    case 'undefined':
      // Dropped from objects; `null` in arrays.
      return 4 <= limit ? 4 : undefined;
    case 'object': {
      if (value === null) return 4 <= limit ? 4 : undefined;
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined;
      let total = 2;
      if (Array.isArray(value)) {
        for (const item of value as unknown[]) {
          const n = jsonBytesAtMost(item, limit - total - 1);
          if (n === undefined) return undefined;
          total += n + 1;
        }
        return total <= limit ? total : undefined;
      }
      // for-in may also see inherited enumerable keys: that only raises the bound.
      const record = value as Record<string, unknown>;
      for (const k in record) {
        const key = k.length * 6 + 3;
        const n = jsonBytesAtMost(record[k], limit - total - key - 1);
        if (n === undefined) return undefined;
        total += key + n + 1;
      }
      return total <= limit ? total : undefined;
    }
    default:
      return undefined;
  }
}

/** True when `value` nests objects or arrays more than `limit` levels deep. */
function depthExceeds(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (limit === 0) return true;
  for (const child of Object.values(value)) {
    if (depthExceeds(child, limit - 1)) return true;
  }
  return false;
}
