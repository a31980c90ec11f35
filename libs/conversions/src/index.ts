import { DEFAULT_QUALIFYING_NAMES } from '@svc/contracts';
import { preparedRaw, type Db } from '@svc/runtime';

/**
 * The `conversions` schema: its migrations, and the one way another service
 * reads it. The conversion forwarder is its only writer. The identity
 * resolver asks which event names to queue as conversion candidates; the
 * Profiles API, whether a click ID is exhausted.
 */
export { conversionsMigrations } from './migrations';

/**
 * SQL: true when the click (`alias`.org_id, click_type, click_id) has been
 * exhausted by the forwarder (past its window, or refused by the platform
 * as expired). For embedding in another service's read query.
 */
export const isClickExhaustedSql = (alias: string): string =>
  `exists (select 1 from conversions.exhausted_click_ids x where x.org_id = ${alias}.org_id and x.click_type = ${alias}.click_type and x.click_id = ${alias}.click_id)`;

/**
 * Every name that qualifies under the organisation's active connectors (a
 * connector without a custom set contributes the defaults). Empty when it
 * has none: the resolver then queues no candidates for it.
 */
export async function qualifyingConversionNames(db: Db, orgId: string): Promise<ReadonlySet<string>> {
  // Asked once per organisation in every resolver transaction: a prepared statement.
  const { rows } = (await preparedRaw(db, `select event_names from conversions.connectors where org_id = ? and state = 'active'`, [orgId])) as {
    rows: Array<{ event_names: string[] | null }>;
  };
  const names = new Set<string>();
  for (const { event_names } of rows) for (const n of event_names ?? DEFAULT_QUALIFYING_NAMES) names.add(n);
  return names;
}
