import { DEFAULT_QUALIFYING_NAMES } from '@svc/contracts';
import type { Db } from '@svc/runtime';

/**
 * The conversion forwarder owns `conversions.*` (its migrations, every
 * write); this is the one way another service reads it. The identity
 * resolver asks it which event names to queue as conversion candidates.
 */

/**
 * Every name that qualifies under the organisation's active connectors (a
 * connector without a custom set contributes the defaults). Empty when it
 * has none: the resolver then queues no candidates for it.
 */
export async function qualifyingConversionNames(db: Db, orgId: string): Promise<ReadonlySet<string>> {
  const rows = (await db('conversions.connectors').where({ org_id: orgId, state: 'active' }).select('event_names')) as Array<{ event_names: string[] | null }>;
  const names = new Set<string>();
  for (const { event_names } of rows) for (const n of event_names ?? DEFAULT_QUALIFYING_NAMES) names.add(n);
  return names;
}
