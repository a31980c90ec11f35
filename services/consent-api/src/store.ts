import type { ConsentDecision, ConsentPurpose, ConsentRecordView, CurrentConsent, ProfileErased } from '@svc/contracts';
import { ANONYMOUS_IDS_OF_USER_SQL, baseHashSql, type IdentifierHashes } from '@svc/identity';
import { isoTimestampSql, type Db } from '@svc/runtime';

export interface Subject {
  anonymousId?: string;
  userId?: string;
}

/** Keyset position in a subject's history: newest first, ties by id. */
export interface HistoryCursor {
  receivedMicros: string;
  id: string;
}

export interface NewRecord {
  orgId: string;
  keyId: string;
  decision: ConsentDecision;
  clientIp: string | null;
  userAgent: string | null;
}

export interface StoredRecord extends ConsentRecordView {
  org_id: string;
  received_micros: string;
}

const COLUMNS = `id, org_id, anonymous_id, user_id, purposes, source,
  ${isoTimestampSql('client_timestamp')} as client_timestamp,
  ${isoTimestampSql('received_at', 'US')} as received_at,
  ((extract(epoch from received_at) * 1000000)::bigint)::text as received_micros`;

/**
 * The consent audit trail. Records are only ever inserted (the table refuses
 * updates and deletes); the current decision per purpose is derived from them.
 */
export class ConsentStore {
  constructor(private readonly db: Db) {}

  async record(r: NewRecord): Promise<StoredRecord> {
    const { rows } = await this.db.raw<{ rows: StoredRecord[] }>(
      `insert into consent.records (org_id, anonymous_id, user_id, purposes, source, client_timestamp, key_id, client_ip, user_agent)
       values (?, ?, ?, ?::jsonb, ?, ?, ?, ?::inet, ?)
       returning ${COLUMNS}`,
      [
        r.orgId,
        r.decision.anonymousId,
        r.decision.userId ?? null,
        JSON.stringify(r.decision.purposes),
        r.decision.source ?? 'api',
        r.decision.timestamp ?? null,
        r.keyId,
        r.clientIp || null,
        r.userAgent?.slice(0, 512) ?? null,
      ],
    );
    return rows[0]!;
  }

  /** One page of a subject's decisions, newest first. */
  async history(orgId: string, subject: Subject, limit: number, after?: HistoryCursor): Promise<{ records: StoredRecord[]; hasMore: boolean }> {
    const [where, params] = subjectFilter(orgId, subject);
    const keyset = after
      ? `and (received_at, id) < (timestamptz 'epoch' + ?::bigint * interval '1 microsecond', ?::uuid)`
      : '';
    const { rows } = await this.db.raw<{ rows: StoredRecord[] }>(
      `select ${COLUMNS} from consent.records where ${where} ${keyset}
       order by received_at desc, id desc limit ?`,
      [...params, ...(after ? [after.receivedMicros, after.id] : []), limit + 1],
    );
    return { records: rows.slice(0, limit), hasMore: rows.length > limit };
  }

  /** The newest decision for each purpose the subject ever decided on. */
  async current(orgId: string, subject: Subject): Promise<Partial<Record<ConsentPurpose, CurrentConsent>>> {
    const [where, params] = subjectFilter(orgId, subject, 'r.');
    const { rows } = await this.db.raw<{ rows: Array<{ purpose: ConsentPurpose; granted: boolean; source: string; decided_at: string; record_id: string }> }>(
      `select distinct on (p.key) p.key as purpose, p.value::boolean as granted, r.source,
              ${isoTimestampSql('r.received_at', 'US')} as decided_at, r.id as record_id
       from consent.records r cross join lateral jsonb_each(r.purposes) p
       where ${where}
       order by p.key, r.received_at desc, r.id desc`,
      params,
    );
    return Object.fromEntries(rows.map(({ purpose, ...rest }) => [purpose, rest]));
  }

  /** Decisions not yet on the topic, oldest first. */
  async unpublished(limit: number): Promise<StoredRecord[]> {
    const { rows } = await this.db.raw<{ rows: StoredRecord[] }>(
      `select ${COLUMNS} from consent.records where published_at is null order by received_at limit ?`,
      [limit],
    );
    return rows;
  }

  async markPublished(ids: readonly string[]): Promise<void> {
    if (ids.length) await this.db.raw('update consent.records set published_at = now() where id = any(?::uuid[])', [[...ids]]);
  }

  /**
   * Redacts an erased person's records (erasure.ts says which are theirs);
   * how many. Each keeps only that a decision existed; a redacted record is
   * not matched again, and is never published (again).
   */
  async redactErased(t: Pick<ProfileErased, 'orgId' | 'erasureId' | 'identifiers'>, hashes: IdentifierHashes): Promise<number> {
    // Whether a record's column is one of the tombstone's hashes, computed by the database (keyed as libs/identity's IdentifierHashes).
    const matches = (type: 'anonymous_id' | 'user_id', column: string, hashesSql: string) => hashes.sqlMatches(baseHashSql('org_id', `'${type}'`, column), hashesSql);
    const anon = t.identifiers.filter((i) => i.type === 'anonymous_id').map((i) => i.hash);
    const users = t.identifiers.filter((i) => i.type === 'user_id').map((i) => i.hash);
    const result = await this.db.raw(
      `with theirs as (
         select id, anonymous_id from consent.records
         where org_id = :org and redacted_at is null
           and ((anonymous_id is not null and ${matches('anonymous_id', 'anonymous_id', ':anon::text[]')})
                or (user_id is not null and ${matches('user_id', 'user_id', ':users::text[]')}))
       ), linked as (
         select id from consent.records
         where org_id = :org and redacted_at is null
           and anonymous_id in (select anonymous_id from theirs where anonymous_id is not null)
       )
       update consent.records set anonymous_id = null, user_id = null, client_ip = null, user_agent = null,
         redacted_at = now(), erasure_id = :erasure, published_at = coalesce(published_at, now())
       where id in (select id from theirs union select id from linked)`,
      { ...hashes.sqlBindings(), org: t.orgId, anon, users, erasure: t.erasureId },
    );
    return (result as { rowCount?: number }).rowCount ?? 0;
  }
}

/**
 * Which records belong to a subject. A user id also finds the decisions its
 * visitor made while still anonymous: every anonymous id recorded together
 * with that user id in a consent decision, and every anonymous id the
 * identity resolver has stitched to that user's profile (through the identity
 * library's read port; the projections share the database).
 */
function subjectFilter(orgId: string, s: Subject, t = ''): [string, string[]] {
  const parts: string[] = [];
  const params: string[] = [orgId];
  if (s.anonymousId) {
    parts.push(`${t}anonymous_id = ?`);
    params.push(s.anonymousId);
  }
  if (s.userId) {
    parts.push(
      `${t}user_id = ?`,
      `${t}anonymous_id in (select l.anonymous_id from consent.records l where l.org_id = ? and l.user_id = ?)`,
      `${t}anonymous_id in (${ANONYMOUS_IDS_OF_USER_SQL})`,
    );
    params.push(s.userId, orgId, s.userId, orgId, s.userId);
  }
  return [`${t}org_id = ? and (${parts.join(' or ')})`, params];
}
