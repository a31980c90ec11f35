import type { Db } from '@svc/runtime';
import { UUID_PATTERN } from './ids';

/**
 * Reading profiles the way every caller must: through merged_into. For the
 * Profiles API as much as for the resolver.
 */

/**
 * The live profile that `idOrCanonical` (a profile UUID or a canonical_id,
 * of this organisation) stands for, following merged_into to the survivor;
 * undefined when there is no such profile in the organisation.
 */
export async function resolveProfileId(db: Db, orgId: string, idOrCanonical: string): Promise<string | undefined> {
  // PostgreSQL text cannot hold U+0000, so no profile's id can: none to find (and no query to fail).
  if (!UUID_PATTERN.test(orgId) || idOrCanonical.includes('\u0000')) return undefined;
  const column = UUID_PATTERN.test(idOrCanonical) ? 'id' : 'canonical_id';
  let row = (await db('identity.profiles').where({ org_id: orgId, [column]: idOrCanonical }).first('id', 'merged_into')) as
    | { id: string; merged_into: string | null }
    | undefined;
  // merged_into always names a live profile (merges re-point whatever pointed at their source); the loop is a safety net.
  for (let hops = 0; row?.merged_into && hops < 16; hops++) {
    row = (await db('identity.profiles').where({ org_id: orgId, id: row.merged_into }).first('id', 'merged_into')) as
      | { id: string; merged_into: string | null }
      | undefined;
  }
  return row && !row.merged_into ? row.id : undefined;
}

export interface ProfileStats {
  total_sessions: number;
  events_last_30_days: number;
}

/** The detail route's stats of a live profile (events_last_30_days by event time, up to `now`). */
export async function profileStats(db: Db, orgId: string, profileId: string, now = new Date()): Promise<ProfileStats | undefined> {
  const { rows } = (await db.raw(
    `select p.session_count as total_sessions,
            (select count(*) from identity.events e
              where e.org_id = p.org_id and e.profile_id = p.id
                and e.event_timestamp > ?::timestamptz - interval '30 days' and e.event_timestamp <= ?::timestamptz
            ) as events_last_30_days
     from identity.profiles p where p.org_id = ? and p.id = ?`,
    [now.toISOString(), now.toISOString(), orgId, profileId],
  )) as { rows: ProfileStats[] };
  const row = rows[0];
  return row && { total_sessions: Number(row.total_sessions), events_last_30_days: Number(row.events_last_30_days) };
}

/**
 * SQL for the current engagement score of the profile row `alias` at the
 * instant `atSql` (an SQL expression; default the statement's now()): the
 * stored score is as of engagement_updated_at and decays under the
 * organisation's half-life (none configured: as stored). Every reader of
 * engagement_score uses this (the Profiles API's list, detail, search and
 * sort).
 */
export function engagementScoreSql(alias: string, atSql = 'now()'): string {
  return `identity.engagement_decay(${alias}.engagement_score, ${alias}.engagement_updated_at, ${atSql},
    (select r.half_life_days from identity.engagement_rules r where r.org_id = ${alias}.org_id))`;
}

/** The organisation's engagement half-life in days; null when its scores never decay. */
export async function engagementHalfLifeDays(db: Db, orgId: string): Promise<number | null> {
  if (!UUID_PATTERN.test(orgId)) return null;
  const row = (await db('identity.engagement_rules').where({ org_id: orgId }).first('half_life_days')) as { half_life_days: number | null } | undefined;
  return row?.half_life_days ?? null;
}

/** The current engagement score of a profile (decayed to `now`), or undefined when there is no such profile. */
export async function currentEngagementScore(db: Db, orgId: string, profileId: string, now = new Date()): Promise<number | undefined> {
  if (!UUID_PATTERN.test(orgId) || !UUID_PATTERN.test(profileId)) return undefined;
  const { rows } = (await db.raw(`select ${engagementScoreSql('p', '?::timestamptz')} as score from identity.profiles p where p.org_id = ? and p.id = ?`, [
    now.toISOString(),
    orgId,
    profileId,
  ])) as { rows: Array<{ score: number }> };
  return rows[0] === undefined ? undefined : Number(rows[0].score);
}

/**
 * A subquery (two `?`: the organisation and a user id) selecting every
 * anonymous id stitched to that user's live profile: how another service
 * (the consent API) finds a user's anonymous past without knowing the
 * identity tables.
 */
export const ANONYMOUS_IDS_OF_USER_SQL = `select a.signal_value from identity.identity_signals u
         join identity.profiles p on p.id = u.profile_id
         join identity.identity_signals a
           on a.org_id = u.org_id and a.profile_id = coalesce(p.merged_into, p.id) and a.signal_type = 'anonymous_id'
         where u.org_id = ? and u.signal_type = 'user_id' and u.signal_value = ?`;

/** A click ID stored on a profile. */
export interface ProfileClick {
  type: string;
  id: string;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

/** The click IDs of the given types on the live profile `profileId` stands for (following a merge). */
export async function clickIdsOfProfile(db: Db, orgId: string, profileId: string, types: readonly string[]): Promise<ProfileClick[]> {
  const { rows } = await db.raw<{ rows: Array<{ click_type: string; click_id: string; first_seen_at: Date; last_seen_at: Date }> }>(
    `select c.click_type, c.click_id, c.first_seen_at, c.last_seen_at
     from identity.profiles p
     join identity.click_ids c on c.org_id = p.org_id and c.profile_id = coalesce(p.merged_into, p.id)
     where p.org_id = ? and p.id = ? and c.click_type = any(?)`,
    [orgId, profileId, [...types]],
  );
  return rows.map((r) => ({ type: r.click_type, id: r.click_id, firstSeenAt: r.first_seen_at, lastSeenAt: r.last_seen_at }));
}
