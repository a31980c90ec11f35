import { DEFAULT_QUALIFYING_NAMES } from '@svc/contracts';
import { preparedRaw, type Db } from '@svc/runtime';

/**
 * The `conversions` schema: its migrations, and its store, the one module per
 * table through which every write to it goes: the connectors (ConnectorStore,
 * secrets sealed), the delivery queue (ConversionQueue) and the exhausted
 * clicks. The conversion forwarder is still the only service that writes
 * (svcctl, the admin CLI, adds and disables connectors through the same
 * store). Other services read it through the ports below: the identity
 * resolver asks which event names to queue as conversion candidates; the
 * Profiles API, whether a click ID is exhausted.
 */
export { conversionsMigrations } from './migrations';
export { ConnectorStore, type Connector, type ConnectorRule, type ConnectorState, type ConnectorView } from './connectors';
export { ConversionQueue, ERASED_PROFILE_ID, QUEUE_STATUSES, type ClaimedRow, type NewQueueRow, type QueueStatus, type QueueView } from './queue';
export { forgetExhaustedClicks, markExhausted } from './exhausted-clicks';
export { PLATFORMS, type ClickRef, type Conversion, type GoogleAdsConfig, type MetaConfig, type Platform } from './platforms';
export { connectorKeyConfigSpec, parseSecretKey, requiredConnectorKeyConfigSpec, resolveSecretKey } from './secrets';

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
