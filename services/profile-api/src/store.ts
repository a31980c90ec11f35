import { DEFAULT_PHONE_COUNTRY_CODE, adminMergeProfiles, eventIdFor, findUnmerge, requestUnmerge, type UnmergeRequestResult, mayBePhone, phoneDefaultOf, engagementHalfLifeDays, engagementScoreSql, normalisePhone, resolveProfileId } from '@svc/identity';
import type { ClickIdView, FingerprintView, IdentitySignalView, MergeJournalEntry, ProfileDetail, ProfileListItem, ProfileSortField, StoredEventView, Touch as ContractTouch, UnmergeView } from '@svc/contracts';
import { isClickExhaustedSql } from '@svc/conversions';
import { isoTimestampSql, type Db } from '@svc/runtime';
import type { EventCursor } from './cursor';
import { ProfileLimits, type SortOrder } from './messages';
import type { SearchField } from './params';

/**
 * Read side of the Profiles API over the resolver's `identity` schema, plus
 * the admin merge, which is the resolver's one merge routine. Every query is
 * scoped by organisation; a profile merged away is never listed and its ids
 * stand for its survivor.
 */

/** `{ source, medium, campaign, at }` as the resolver stores it. The views' shapes are the contracts' (api-responses.ts), which the OpenAPI document is generated from. */
type Touch = ContractTouch | null;

export interface ListQuery {
  limit: number;
  offset: number;
  identified: boolean | undefined;
  sortBy: ProfileSortField;
  sortOrder: SortOrder;
}

export interface EventsQuery {
  limit: number;
  eventName: string | undefined;
  /** Keyset position (cursor path) ... */
  after?: EventCursor | undefined;
  /** ... or rows to skip (offset path). */
  offset?: number | undefined;
  /** Exact count, or an estimate (see eventsTotal). */
  exactTotal: boolean;
}

export interface EventsPage {
  /** The live profile the events belong to (the survivor, for a merged-away id). */
  profileId: string;
  events: StoredEventView[];
  /** Position of the last event of the page, when more follow. */
  next: EventCursor | undefined;
  total: number;
}

export interface SearchQuery {
  field: SearchField;
  value: string;
  partial: boolean;
  limit: number;
}

export interface MergesPage {
  /** The live profile whose journal it is. */
  profileId: string;
  entries: MergeJournalEntry[];
  /** The id of the last entry returned, when older ones exist: where the next page starts. */
  next: string | undefined;
}

export interface MergeResult {
  sourceId: string;
  targetId: string;
  mergedAt: string | null;
}

/** A bound SQL parameter. */
type Bind = string | number | boolean | null;

const iso = (d: Date | string): string => (d instanceof Date ? d.toISOString() : new Date(d).toISOString());

/**
 * The list item's columns, from identity.profiles aliased `p`. engagement_score
 * is the current value: the stored one decayed to now under the
 * organisation's engagement rules (the resolver's engagementScoreSql).
 */
const ITEM_COLUMNS = `p.id, p.canonical_id, p.last_seen_at, p.first_seen_at, p.event_count, p.session_count,
  ${engagementScoreSql('p')} as engagement_score, p.created_at, p.identified, p.first_touch, p.last_touch`;

interface ItemRow {
  id: string;
  canonical_id: string;
  last_seen_at: Date;
  first_seen_at: Date;
  event_count: number | string;
  session_count: number;
  engagement_score: number;
  created_at: Date;
  identified: boolean;
  first_touch: Touch;
  last_touch: Touch;
}

function item(r: ItemRow): ProfileListItem {
  return {
    id: r.id,
    canonical_id: r.canonical_id,
    last_seen_at: iso(r.last_seen_at),
    first_seen_at: iso(r.first_seen_at),
    event_count: Number(r.event_count),
    session_count: Number(r.session_count),
    engagement_score: Number(r.engagement_score),
    created_at: iso(r.created_at),
    identified: r.identified,
    first_touch: r.first_touch,
    last_touch: r.last_touch,
  };
}

/** Sort columns by name: the only text that reaches ORDER BY (never the request's). */
const SORT_COLUMNS: Readonly<Record<ProfileSortField, string>> = {
  last_seen_at: 'p.last_seen_at',
  first_seen_at: 'p.first_seen_at',
  event_count: 'p.event_count',
  session_count: 'p.session_count',
  engagement_score: 'p.engagement_score',
  created_at: 'p.created_at',
};

/** event_timestamp as microseconds since the epoch (exact: extract returns numeric). */
const microsSql = (column: string) => `((extract(epoch from ${column}) * 1000000)::bigint)::text`;
const FROM_MICROS = `timestamptz 'epoch' + ?::bigint * interval '1 microsecond'`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The profile's active identity signals as a JSON array: strongest first (as the resolver ranks them), then most recently seen. */
const signalsJson = (t: string) => `(select coalesce(json_agg(json_build_object(
    'signal_type', s.signal_type, 'signal_value', s.signal_value, 'confidence', s.confidence,
    'first_seen_at', ${isoTimestampSql('s.first_seen_at')}, 'last_seen_at', ${isoTimestampSql('s.last_seen_at')}, 'occurrence_count', s.occurrence_count)
    order by array_position(array['user_id', 'email', 'phone', 'anonymous_id'], s.signal_type), s.last_seen_at desc, s.signal_value), '[]'::json)
  from identity.identity_signals s where s.org_id = ${t}.org_id and s.profile_id = ${t}.id)`;

/** `%`, `_` and the escape character itself match literally. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * SQL for the live profile `ref` (a profile UUID or a canonical_id) stands
 * for in the organisation, as a one-row relation: the row itself, or the
 * survivor its merged_into names (merges re-point whatever pointed at a
 * source, so one hop reaches a live profile). Used inline, so that a
 * per-profile read is one statement; when it finds nothing, the resolver's
 * resolveProfileId (which follows chains of any length) has the last word.
 */
function liveTarget(orgId: string, ref: string): { sql: string; params: Bind[] } {
  const byId = UUID.test(ref);
  return {
    sql: `select p.* from identity.profiles p
          where p.org_id = ? and p.merged_into is null
            and p.id = (select coalesce(h.merged_into, h.id) from identity.profiles h
                        where h.org_id = ? and ${byId ? 'h.id = ?::uuid' : 'h.canonical_id = ?'})`,
    params: [orgId, orgId, ref],
  };
}

/** Whether `ref` could be a profile UUID or canonical_id at all (PostgreSQL text holds no U+0000): if not, there is nothing to look up. */
const canNameAProfile = (ref: string): boolean => ref !== '' && ref.length <= ProfileLimits.maxIdLength && !ref.includes('\u0000');

export class ProfileStore {
  constructor(
    private readonly db: Db,
    /** PHONE_DEFAULT_COUNTRY_CODE, as the resolver normalised the stored phones with it where the organisation names no region. */
    private readonly defaultPhoneCountryCode = DEFAULT_PHONE_COUNTRY_CODE,
  ) {}

  /**
   * The live profile `idOrCanonical` (UUID or canonical_id) stands for in the
   * organisation, following merges to the survivor; undefined when none.
   */
  async resolve(orgId: string, idOrCanonical: string): Promise<string | undefined> {
    if (!canNameAProfile(idOrCanonical)) return undefined;
    return resolveProfileId(this.db, orgId, idOrCanonical);
  }

  /**
   * Runs a per-profile read (one statement, resolution inline); when it finds
   * no profile, asks resolveProfileId, and runs it again on the survivor that
   * names, if any (a merged_into chain; never expected, but never wrong).
   */
  private async onLive<T>(orgId: string, ref: string, read: (ref: string) => Promise<T | undefined>): Promise<T | undefined> {
    if (!canNameAProfile(ref)) return undefined;
    const found = await read(ref);
    if (found !== undefined) return found;
    const survivor = await resolveProfileId(this.db, orgId, ref);
    return survivor === undefined || survivor === ref ? undefined : read(survivor);
  }

  async list(orgId: string, q: ListQuery): Promise<{ profiles: ProfileListItem[]; total: number }> {
    const filter = q.identified === undefined ? '' : 'and p.identified = ?';
    const filterParams = q.identified === undefined ? [] : [q.identified];
    const dir = q.sortOrder === 'asc' ? 'asc' : 'desc';
    // Scores that decay sort by their current value (every score decays by the same factor, so
    // the order only changes with new events); without decay the stored value is current and its
    // index serves the sort.
    const decays = q.sortBy === 'engagement_score' && (await engagementHalfLifeDays(this.db, orgId)) !== null;
    const sortColumn = decays ? engagementScoreSql('p') : SORT_COLUMNS[q.sortBy];
    const [page, count] = await Promise.all([
      this.db.raw<{ rows: ItemRow[] }>(
        `select ${ITEM_COLUMNS} from identity.profiles p
         where p.org_id = ? and p.merged_into is null ${filter}
         order by ${sortColumn} ${dir}, p.id ${dir}
         limit ? offset ?`,
        [orgId, ...filterParams, q.limit, q.offset],
      ),
      this.db.raw<{ rows: Array<{ n: number }> }>(
        `select count(*) as n from identity.profiles p where p.org_id = ? and p.merged_into is null ${filter}`,
        [orgId, ...filterParams],
      ),
    ]);
    return { profiles: page.rows.map(item), total: Number(count.rows[0]?.n ?? 0) };
  }

  /**
   * The detail of the live profile `ref` stands for, in one statement;
   * undefined when there is none in the organisation. stats are the
   * resolver's (profileStats): total_sessions is session_count,
   * events_last_30_days counts events by event time in (now - 30 days, now].
   */
  async detail(orgId: string, ref: string, now = new Date()): Promise<ProfileDetail | undefined> {
    return this.onLive(orgId, ref, async (r) => {
      const target = liveTarget(orgId, r);
      const { rows } = await this.db.raw<{ rows: Array<Omit<ProfileDetail, 'stats'> & { total_sessions: number; events_last_30_days: number }> }>(
        `with t as (${target.sql})
         select t.id, t.canonical_id, ${signalsJson('t')} as identities, t.session_count as total_sessions,
                (select count(*) from identity.events e
                 where e.org_id = t.org_id and e.profile_id = t.id
                   and e.event_timestamp > ?::timestamptz - interval '30 days' and e.event_timestamp <= ?::timestamptz) as events_last_30_days,
                t.identified, t.user_id, t.first_touch, t.last_touch,
                ${isoTimestampSql('t.first_seen_at')} as first_seen_at, ${isoTimestampSql('t.last_seen_at')} as last_seen_at,
                t.event_count, ${engagementScoreSql('t', '?::timestamptz')} as engagement_score, ${isoTimestampSql('t.created_at')} as created_at
         from t`,
        [...target.params, now.toISOString(), now.toISOString(), now.toISOString()],
      );
      const row = rows[0];
      if (!row) return undefined;
      return {
        id: row.id,
        canonical_id: row.canonical_id,
        identities: row.identities,
        stats: { total_sessions: Number(row.total_sessions), events_last_30_days: Number(row.events_last_30_days) },
        identified: row.identified,
        user_id: row.user_id,
        first_touch: row.first_touch,
        last_touch: row.last_touch,
        first_seen_at: row.first_seen_at,
        last_seen_at: row.last_seen_at,
        event_count: Number(row.event_count),
        engagement_score: Number(row.engagement_score),
        created_at: row.created_at,
      };
    });
  }

  /** Signals, fingerprints and click IDs of the live profile `ref` stands for, in one statement. */
  async identities(
    orgId: string,
    ref: string,
  ): Promise<{ signals: IdentitySignalView[]; fingerprints: FingerprintView[]; click_ids: ClickIdView[] } | undefined> {
    return this.onLive(orgId, ref, async (r) => {
      const target = liveTarget(orgId, r);
      const { rows } = await this.db.raw<{ rows: Array<{ signals: IdentitySignalView[]; fingerprints: FingerprintView[]; click_ids: ClickIdView[] }> }>(
        `with t as (${target.sql})
         select ${signalsJson('t')} as signals,
                (select coalesce(json_agg(json_build_object(
                   'fingerprint_hash', f.fingerprint_hash, 'stability_score', f.stability_score,
                   'first_seen_at', ${isoTimestampSql('f.first_seen_at')}, 'last_seen_at', ${isoTimestampSql('f.last_seen_at')}, 'occurrence_count', f.occurrence_count)
                   order by f.last_seen_at desc, f.fingerprint_hash), '[]'::json)
                 from identity.fingerprints f where f.org_id = t.org_id and f.profile_id = t.id) as fingerprints,
                (select coalesce(json_agg(json_build_object(
                   'click_type', c.click_type, 'click_id', c.click_id, 'campaign_source', c.campaign_source,
                   'campaign_medium', c.campaign_medium, 'first_seen_at', ${isoTimestampSql('c.first_seen_at')}, 'is_exhausted', ${isClickExhaustedSql('c')})
                   order by c.first_seen_at desc, c.click_type, c.click_id), '[]'::json)
                 from identity.click_ids c where c.org_id = t.org_id and c.profile_id = t.id) as click_ids
         from t`,
        target.params,
      );
      return rows[0];
    });
  }

  /**
   * One page of the merge journal of the live profile `ref` stands for:
   * every merge into it or into a profile merged into it (merges re-point,
   * so those are one hop away), newest first by entry id, older than
   * `before` when given. undefined when there is no such profile.
   */
  async merges(orgId: string, ref: string, page: { limit: number; before: string | undefined }): Promise<MergesPage | undefined> {
    const survivor = await this.resolve(orgId, ref);
    if (survivor === undefined) return undefined;
    const { rows } = await this.db.raw<{ rows: Array<Omit<MergeJournalEntry, 'event_id'>> }>(
      `with rows as materialized (
         select :survivor::uuid as id union all select p.id from identity.profiles p where p.org_id = :org and p.merged_into = :survivor
       ), entries as (
         -- Merges into the profile, and once undone, those that had taken one of its rows away.
         (select * from identity.merges m where m.org_id = :org and m.target_profile_id in (select id from rows)
            and (:before::bigint is null or m.id < :before::bigint) order by m.id desc limit :limit)
         union
         (select * from identity.merges m where m.org_id = :org and m.undone_at is not null and m.source_profile_id in (select id from rows)
            and (:before::bigint is null or m.id < :before::bigint) order by m.id desc limit :limit)
       )
       select m.id::text as id, ${isoTimestampSql('m.merged_at')} as merged_at, m.reason, m.signal_type, m.source_profile_id,
              s.canonical_id as source_canonical_id, m.target_profile_id, m.actor, m.message_id, m.note,
              ${isoTimestampSql('m.undone_at')} as undone_at, m.undone_by
       from entries m
       join identity.profiles s on s.id = m.source_profile_id
       order by m.id desc
       limit :limit`,
      { survivor, org: orgId, before: page.before ?? null, limit: page.limit + 1 },
    );
    const entries = rows.slice(0, page.limit).map(({ message_id, note, ...r }) => ({ ...r, event_id: message_id === null ? null : eventIdFor(orgId, message_id), message_id, note }));
    return { profileId: survivor, entries, next: rows.length > page.limit ? entries[entries.length - 1]!.id : undefined };
  }

  /**
   * One page of the events of the live profile `ref` stands for, newest
   * first (event_timestamp desc, id desc), after a keyset position or
   * skipping `offset` rows, with the total; one statement. undefined when
   * there is no such profile.
   */
  async events(orgId: string, ref: string, q: EventsQuery): Promise<EventsPage | undefined> {
    return this.onLive(orgId, ref, async (r) => {
      const target = liveTarget(orgId, r);
      const total = this.totalSql(q);
      const nameFilter = q.eventName === undefined ? '' : 'and e.event_name = ?';
      const keyset = q.after ? `and (e.event_timestamp, e.id) < (${FROM_MICROS}, ?::uuid)` : '';
      const { rows } = await this.db.raw<{ rows: Array<Omit<StoredEventView, 'id'> & { profile_id: string; total: number; id: string | null; micros: string }> }>(
        `with t as materialized (select p.id, p.org_id, ${total.sql} as total from (${target.sql}) p)
         select t.id as profile_id, t.total, e.id, e.event_name, ${isoTimestampSql('e.event_timestamp')} as event_timestamp,
                e.properties, e.context, e.resolution_method, ${microsSql('e.event_timestamp')} as micros
         from t left join lateral (
           select e.id, e.event_name, e.event_timestamp, e.properties, e.context, e.resolution_method
           from identity.events e
           where e.org_id = t.org_id and e.profile_id = t.id ${nameFilter} ${keyset}
           order by e.event_timestamp desc, e.id desc
           limit ? offset ?
         ) e on true
         order by e.event_timestamp desc, e.id desc`,
        [
          ...total.params,
          ...target.params,
          ...(q.eventName === undefined ? [] : [q.eventName]),
          ...(q.after ? [q.after.micros, q.after.id] : []),
          q.limit + 1,
          q.after ? 0 : (q.offset ?? 0),
        ],
      );
      const head = rows[0];
      if (!head) return undefined;
      const found = rows.filter((row) => row.id !== null);
      const page = found.slice(0, q.limit);
      const last = page.at(-1);
      return {
        profileId: head.profile_id,
        events: page.map((e) => ({
          id: e.id!,
          event_name: e.event_name,
          event_timestamp: e.event_timestamp,
          properties: e.properties,
          context: e.context,
          resolution_method: e.resolution_method,
        })),
        next: found.length > q.limit && last ? { profileId: head.profile_id, micros: last.micros, id: last.id! } : undefined,
        total: Number(head.total),
      };
    });
  }

  /**
   * The total, as an expression over the profile row `p`. Exact: count(*)
   * over the profile's events (an index-only scan, linear in the profile's
   * events). Estimated (cursor path, no precise_total): without a filter the
   * profile's event_count, which the resolver updates in the transaction that
   * stores the events (exact as of the last committed batch); with
   * event_name, the share of that name among the profile's newest 1,000
   * events times event_count (exact when the profile has fewer). Bounded work
   * either way, whatever the profile's size.
   */
  private totalSql(q: EventsQuery): { sql: string; params: Bind[] } {
    const name = q.eventName;
    if (q.exactTotal) {
      return {
        sql: `(select count(*) from identity.events c where c.org_id = p.org_id and c.profile_id = p.id ${name === undefined ? '' : 'and c.event_name = ?'})`,
        params: name === undefined ? [] : [name],
      };
    }
    if (name === undefined) return { sql: 'p.event_count', params: [] };
    const sample = ProfileLimits.estimateSample;
    return {
      sql: `(select case when count(*) < ${sample} then count(*) filter (where x.event_name = ?)
                         else round(count(*) filter (where x.event_name = ?)::numeric / count(*) * greatest(p.event_count, count(*)))::bigint end
             from (select c.event_name from identity.events c where c.org_id = p.org_id and c.profile_id = p.id
                   order by c.event_timestamp desc, c.id desc limit ${sample}) x)`,
      params: [name, name],
    };
  }

  /**
   * Live profiles matching one search field, most recently seen first,
   * de-duplicated (a hit on a merged-away profile's canonical_id counts for
   * its survivor).
   *
   * Exact (default): email lower-cased and trimmed; user_id and anonymous_id
   * as given; q against every signal type (email lower-cased, phone
   * normalised to E.164 as the resolver stores it) and canonical_id.
   * Partial: case-insensitive substring (ILIKE, served by the trigram
   * indexes) of the same values.
   */
  async search(orgId: string, q: SearchQuery): Promise<ProfileListItem[]> {
    const hits: string[] = [];
    const params: Bind[] = [];
    const signal = (type: string | undefined, value: string) => {
      const typeSql = type === undefined ? '' : 'and s.signal_type = ? ';
      hits.push(
        `select s.profile_id as id from identity.identity_signals s
         where s.org_id = ? ${typeSql}and s.signal_value ${q.partial ? "ilike ? escape '\\'" : '= ?'}`,
      );
      params.push(orgId, ...(type === undefined ? [] : [type]), value);
    };
    const pattern = (v: string) => `%${escapeLike(v)}%`;
    switch (q.field) {
      case 'email': {
        const email = q.value.trim().toLowerCase();
        signal('email', q.partial ? pattern(email) : email);
        break;
      }
      case 'user_id':
      case 'anonymous_id':
        signal(q.field, q.partial ? pattern(q.value) : q.value);
        break;
      case 'q':
        if (q.partial) {
          signal(undefined, pattern(q.value));
          hits.push(`select c.profile_id as id from identity.canonical_ids c where c.org_id = ? and c.canonical_id ilike ? escape '\\'`);
          params.push(orgId, pattern(q.value));
        } else {
          // The organisation's rules are read only for what may be a phone (most searches are ids and emails).
          const phone = mayBePhone(q.value) ? normalisePhone(q.value, await phoneDefaultOf(this.db, orgId, this.defaultPhoneCountryCode)) : null;
          const pairs: Array<[string, string]> = [
            ['user_id', q.value],
            ['anonymous_id', q.value],
            ['email', q.value.toLowerCase()],
            ...(phone === null ? [] : [['phone', phone] as [string, string]]),
          ];
          hits.push(
            `select s.profile_id as id from identity.identity_signals s
             where s.org_id = ? and (${pairs.map(() => '(s.signal_type = ? and s.signal_value = ?)').join(' or ')})`,
          );
          params.push(orgId, ...pairs.flat());
          hits.push('select p.id from identity.profiles p where p.org_id = ? and p.canonical_id = ?');
          params.push(orgId, q.value);
        }
        break;
    }
    const { rows } = await this.db.raw<{ rows: ItemRow[] }>(
      `with hits as (${hits.join(' union ')}),
       survivors as (
         select distinct coalesce(h.merged_into, h.id) as id
         from identity.profiles h where h.org_id = ? and h.id in (select id from hits)
       )
       select ${ITEM_COLUMNS} from identity.profiles p
       where p.org_id = ? and p.merged_into is null and p.id in (select id from survivors)
       order by p.last_seen_at desc, p.id desc
       limit ?`,
      [...params, orgId, orgId, q.limit],
    );
    return rows.map(item);
  }

  /**
   * The admin merge: the resolver's one merge routine (it resolves both ids,
   * locks both profile rows, moves everything, audits in identity.merges and
   * queues profiles.changes). Throws its errors: NotFoundError for an
   * unknown or other-organisation profile, ValidationError for a profile into
   * itself.
   */
  /** Records the undoing of a journal entry of the profile `profileRef` names (libs/identity requestUnmerge); the resolver carries it out. */
  async unmerge(input: { orgId: string; profileRef: string; mergeId: string; actor: string }): Promise<UnmergeRequestResult> {
    if (!canNameAProfile(input.profileRef)) return { outcome: 'profile_not_found' };
    return requestUnmerge(this.db, input);
  }

  /** The unmerge request with this id, of the organisation. */
  async findUnmerge(orgId: string, id: string): Promise<UnmergeView | undefined> {
    return findUnmerge(this.db, orgId, { id });
  }

  async merge(input: { orgId: string; source: string; target: string; actor: string; note: string | null }): Promise<MergeResult> {
    const { sourceId, targetId } = await adminMergeProfiles(this.db, input);
    const { rows } = await this.db.raw<{ rows: Array<{ merged_at: Date }> }>(
      `select merged_at from identity.merges
       where org_id = ? and source_profile_id = ? and target_profile_id = ? and reason = 'admin'
       order by id desc limit 1`,
      [input.orgId, sourceId, targetId],
    );
    const at = rows[0]?.merged_at;
    return { sourceId, targetId, mergedAt: at ? iso(at) : null };
  }
}
