import { baseHashSql, type IdentifierHashes } from '@svc/identity';
import type { Db } from '@svc/runtime';
import { rowCount } from './row-count';

/**
 * conversions.exhausted_click_ids: the clicks that can no longer earn a
 * conversion (past their platform's window, or refused by the platform).
 * A mark is never cleared, except when its person is erased.
 */

/** Marks clicks exhausted (past their window, or refused by the platform); never clears the mark. */
export async function markExhausted(db: Db, clicks: ReadonlyArray<{ orgId: string; type: string; id: string }>): Promise<void> {
  if (clicks.length === 0) return;
  await db.raw(
    `insert into conversions.exhausted_click_ids (org_id, click_type, click_id)
     select * from unnest(?::uuid[], ?::text[], ?::text[])
     on conflict do nothing`,
    [clicks.map((c) => c.orgId), clicks.map((c) => c.type), clicks.map((c) => c.id)],
  );
}

/**
 * Deletes an erased person's exhausted-click marks, matched by the
 * tombstone's click hashes (profiles.erased `clickIds[].hash`, under any of
 * `hashes`' keys). Returns how many went.
 */
export async function forgetExhaustedClicks(db: Db, orgId: string, clickHashes: readonly string[], hashes: IdentifierHashes): Promise<number> {
  const clicks = await db.raw(
    `delete from conversions.exhausted_click_ids x
           where x.org_id = :org and ${hashes.sqlMatches(baseHashSql('x.org_id', 'x.click_type', 'x.click_id'), ':clicks::text[]')}`,
    { ...hashes.sqlBindings(), org: orgId, clicks: clickHashes },
  );
  return rowCount(clicks);
}
