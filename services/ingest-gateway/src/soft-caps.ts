import { Limits } from '@svc/contracts';

export type SoftCapBreach = 'too_many_keys' | 'value_too_large' | 'too_deep';

const { maxKeys, maxValueBytes, maxDepth } = Limits.softCaps;

/**
 * Which warn-only caps an object (properties or traits) breaks: more than 300
 * keys, a value over 32 KiB as JSON, or nesting deeper than 8. Never a reason
 * to reject; the gateway logs and counts the breach and stores the event.
 */
export function softCapBreaches(value: Record<string, unknown> | undefined): SoftCapBreach[] {
  if (!value) return [];
  const breaches: SoftCapBreach[] = [];
  if (Object.keys(value).length > maxKeys) breaches.push('too_many_keys');
  // Cheap pre-check: a value cannot exceed 32 KiB of JSON unless the whole object does.
  if (JSON.stringify(value).length > maxValueBytes) {
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

/** True when `value` nests objects or arrays more than `limit` levels deep. */
function depthExceeds(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (limit === 0) return true;
  for (const child of Object.values(value)) {
    if (depthExceeds(child, limit - 1)) return true;
  }
  return false;
}
