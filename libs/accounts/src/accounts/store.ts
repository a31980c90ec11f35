import ipaddr from 'ipaddr.js';
import { NotFoundError, ValidationError, type Db, type SqlCondition } from '@svc/runtime';
import { generateApiKey, hashApiKey, hashesEqual, keyHint, looksLikeApiKey, type KeyType } from './api-keys';

export const PLAN_STATES = ['active', 'grace', 'limit_reached', 'paused'] as const;
export type PlanState = (typeof PLAN_STATES)[number];

export interface Organization {
  id: string;
  name: string;
  planState: PlanState;
  /** Unique events per calendar month; null means no quota. */
  monthlyEventQuota: number | null;
  createdAt: string;
}

export interface ApiKeyRecord {
  id: string;
  orgId: string;
  type: KeyType;
  keyHint: string;
  ipAllowlist: string[];
  originAllowlist: string[];
  ratePerMinuteCap: number | null;
  createdAt: string;
  revokedAt: string | null;
  replacedBy: string | null;
}

/** A key that authenticated, with what the edge needs to decide on the request. */
export interface VerifiedKey {
  keyId: string;
  orgId: string;
  type: KeyType;
  ipAllowlist: string[];
  originAllowlist: string[];
  ratePerMinuteCap: number | null;
  planState: PlanState;
  monthlyEventQuota: number | null;
  /**
   * Set when a cache served the key (KeyCache): what must still hold in the
   * database before a request is answered on it (the key and its
   * organisation unchanged since they were read).
   */
  unconfirmed?: SqlCondition;
  /**
   * Set when a cache served the key while the database could not be reached,
   * as the database last confirmed it (KeyCache's outage grace).
   */
  servedThroughOutage?: true;
}

export interface NewKeyOptions {
  orgId: string;
  type: KeyType;
  ipAllowlist?: string[];
  originAllowlist?: string[];
  ratePerMinuteCap?: number | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Organisations and API keys. Keys are stored only as SHA-256 hashes. */
export class AccountsStore {
  constructor(private readonly db: Db) {}

  async createOrganization(input: { name: string; monthlyEventQuota?: number | null }): Promise<Organization> {
    const name = input.name.trim();
    if (!name || name.length > 200) throw new ValidationError('name must be 1 to 200 characters');
    const quota = input.monthlyEventQuota ?? null;
    if (quota !== null && (!Number.isSafeInteger(quota) || quota < 0)) {
      throw new ValidationError('monthly quota must be a non-negative integer');
    }
    const [row] = await this.db('accounts.organizations')
      .insert({ name, monthly_event_quota: quota })
      .returning('*');
    return toOrganization(row);
  }

  async getOrganization(id: string): Promise<Organization> {
    const row = UUID.test(id) ? await this.db('accounts.organizations').where({ id }).first() : undefined;
    if (!row) throw new NotFoundError(`organization ${id} not found`);
    return toOrganization(row);
  }

  async setPlanState(orgId: string, state: PlanState): Promise<Organization> {
    await this.getOrganization(orgId);
    const [row] = await this.db('accounts.organizations')
      .where({ id: orgId })
      .update({ plan_state: state, updated_at: this.db.fn.now() })
      .returning('*');
    return toOrganization(row);
  }

  async setMonthlyQuota(orgId: string, quota: number | null): Promise<Organization> {
    await this.getOrganization(orgId);
    const [row] = await this.db('accounts.organizations')
      .where({ id: orgId })
      .update({ monthly_event_quota: quota, updated_at: this.db.fn.now() })
      .returning('*');
    return toOrganization(row);
  }

  /** Unique events the organisation sent in the calendar month (UTC) of `at`. */
  async monthlyUsage(orgId: string, at: Date): Promise<number> {
    const row = await this.db('accounts.monthly_usage')
      .where({ org_id: orgId, month: monthStart(at) })
      .first('unique_events');
    return row ? Number(row.unique_events) : 0;
  }

  /** Adds `count` new unique events to the month of `at`; runs inside the caller's transaction. */
  static async addUsage(trx: Db, orgId: string, at: Date, count: number): Promise<void> {
    if (count <= 0) return;
    await trx.raw(AccountsStore.usageUpsertSql('?'), [AccountsStore.usageRecords([{ orgId, at, count }])]);
  }

  /**
   * addUsage for several (organisation, month) counts at once: the rows for
   * usageUpsertSql, run as a statement of its own or as a data-modifying CTE
   * of the caller's (one round trip with its other writes).
   */
  static usageRecords(entries: ReadonlyArray<{ orgId: string; at: Date; count: number }>): string {
    return JSON.stringify(entries.filter((e) => e.count > 0).map((e) => ({ org_id: e.orgId, month: monthStart(e.at), n: e.count })));
  }

  /**
   * The one statement that writes accounts.monthly_usage, with usageRecords
   * bound as `binding` (`?`, or a knex named binding such as `:usage` when it
   * is a CTE of a larger statement). Rows are locked in (org, month) order,
   * so concurrent callers cannot deadlock on them.
   */
  static usageUpsertSql(binding: '?' | `:${string}`): string {
    return `insert into accounts.monthly_usage as u (org_id, month, unique_events)
       select org_id, month, n from jsonb_to_recordset(${binding}::jsonb) as r (org_id uuid, month date, n bigint) order by org_id, month
       on conflict (org_id, month) do update set unique_events = u.unique_events + excluded.unique_events`;
  }

  /** Creates a key; the returned `key` is the only time the secret exists outside the client. */
  async createApiKey(opts: NewKeyOptions): Promise<{ record: ApiKeyRecord; key: string }> {
    await this.getOrganization(opts.orgId);
    const ipAllowlist = (opts.ipAllowlist ?? []).map(normaliseCidr);
    const originAllowlist = (opts.originAllowlist ?? []).map(normaliseOrigin);
    const cap = opts.ratePerMinuteCap ?? null;
    if (cap !== null && (!Number.isSafeInteger(cap) || cap < 1)) {
      throw new ValidationError('rate cap must be a positive integer (requests per minute)');
    }
    return this.insertKey(this.db, { ...opts, ipAllowlist, originAllowlist, ratePerMinuteCap: cap });
  }

  async getApiKey(id: string): Promise<ApiKeyRecord> {
    const row = UUID.test(id) ? await this.db('accounts.api_keys').where({ id }).first() : undefined;
    if (!row) throw new NotFoundError(`key ${id} not found`);
    return toKeyRecord(row);
  }

  async listApiKeys(orgId: string): Promise<ApiKeyRecord[]> {
    await this.getOrganization(orgId);
    const rows = await this.db('accounts.api_keys').where({ org_id: orgId }).orderBy('created_at');
    return rows.map(toKeyRecord);
  }

  /** Revokes a key; it fails on the very next request (keys are never cached). */
  async revokeApiKey(id: string): Promise<ApiKeyRecord> {
    await this.getApiKey(id);
    const [row] = await this.db('accounts.api_keys')
      .where({ id })
      .update({ revoked_at: this.db.raw('coalesce(revoked_at, now())') })
      .returning('*');
    return toKeyRecord(row);
  }

  /** Replaces an active key with a new one of the same type and restrictions; the old one stops at once. */
  async rotateApiKey(id: string): Promise<{ record: ApiKeyRecord; key: string }> {
    if (!UUID.test(id)) throw new NotFoundError(`key ${id} not found`);
    return this.db.transaction(async (trx) => {
      const old = await trx('accounts.api_keys').where({ id }).forUpdate().first();
      if (!old) throw new NotFoundError(`key ${id} not found`);
      if (old.revoked_at) throw new ValidationError(`key ${id} is revoked; create a new key instead`);
      const created = await this.insertKey(trx, {
        orgId: old.org_id,
        type: old.type,
        ipAllowlist: parsePgArray(old.ip_allowlist),
        originAllowlist: old.origin_allowlist,
        ratePerMinuteCap: old.rate_cap_per_minute,
      });
      await trx('accounts.api_keys')
        .where({ id })
        .update({ revoked_at: trx.fn.now(), replaced_by: created.record.id });
      return created;
    });
  }

  /**
   * The active key matching `key`, with its organisation's plan state; undefined
   * when unknown, revoked or malformed. The hash comparison is constant-time.
   */
  async verifyApiKey(key: string): Promise<VerifiedKey | undefined> {
    return (await this.readApiKey(key))?.key;
  }

  /**
   * verifyApiKey's answer, with the condition that holds while the key and its
   * organisation stay as read: their rows' versions (xmin, which every update
   * of a row changes), for a cache that confirms a key on each use (KeyCache).
   */
  async readApiKey(key: string): Promise<{ key: VerifiedKey; unchanged: SqlCondition } | undefined> {
    if (!looksLikeApiKey(key)) return undefined;
    const hash = hashApiKey(key);
    const row = await this.db('accounts.api_keys as k')
      .join('accounts.organizations as o', 'o.id', 'k.org_id')
      .where('k.key_hash', hash)
      .whereNull('k.revoked_at')
      .first(
        'k.id',
        'k.org_id',
        'k.type',
        'k.key_hash',
        'k.ip_allowlist',
        'k.origin_allowlist',
        'k.rate_cap_per_minute',
        'o.plan_state',
        'o.monthly_event_quota',
        this.db.raw('k.xmin::text as key_version'),
        this.db.raw('o.xmin::text as org_version'),
      );
    if (!row || !hashesEqual(row.key_hash, hash)) return undefined;
    return {
      key: {
        keyId: row.id,
        orgId: row.org_id,
        type: row.type,
        ipAllowlist: parsePgArray(row.ip_allowlist),
        originAllowlist: row.origin_allowlist,
        ratePerMinuteCap: row.rate_cap_per_minute,
        planState: row.plan_state,
        monthlyEventQuota: row.monthly_event_quota,
      },
      unchanged: {
        sql: `select 1 from accounts.api_keys k join accounts.organizations o on o.id = k.org_id
              where k.id = ? and k.revoked_at is null and k.xmin = ?::xid and o.xmin = ?::xid`,
        bindings: [row.id, row.key_version, row.org_version],
      },
    };
  }

  private async insertKey(
    db: Db,
    opts: Required<NewKeyOptions>,
  ): Promise<{ record: ApiKeyRecord; key: string }> {
    const key = generateApiKey(opts.type);
    const [row] = await db('accounts.api_keys')
      .insert({
        org_id: opts.orgId,
        type: opts.type,
        key_hash: hashApiKey(key),
        key_hint: keyHint(key),
        ip_allowlist: db.raw('?::cidr[]', [opts.ipAllowlist]),
        origin_allowlist: opts.originAllowlist,
        rate_cap_per_minute: opts.ratePerMinuteCap,
      })
      .returning('*');
    return { record: toKeyRecord(row), key };
  }
}

/** The first day of the UTC calendar month of `at`, as `YYYY-MM-01`. */
export function monthStart(at: Date): string {
  return `${at.toISOString().slice(0, 7)}-01`;
}

/** `10.1.2.3/8` → `10.0.0.0/8`; a bare address becomes a single-host range. */
export function normaliseCidr(value: string): string {
  const text = value.trim();
  try {
    if (!text.includes('/')) {
      const addr = ipaddr.process(text);
      return `${addr.toString()}/${addr.kind() === 'ipv4' ? 32 : 128}`;
    }
    const [addr, bits] = ipaddr.parseCIDR(text);
    const network =
      addr.kind() === 'ipv4'
        ? ipaddr.IPv4.networkAddressFromCIDR(text)
        : ipaddr.IPv6.networkAddressFromCIDR(text);
    return `${network.toString()}/${bits}`;
  } catch {
    throw new ValidationError(`invalid CIDR: ${JSON.stringify(text)} (use e.g. 203.0.113.0/24 or 2001:db8::/32)`);
  }
}

/** `https://Shop.Example.com/` → `https://shop.example.com`; anything but a bare origin is refused. */
export function normaliseOrigin(value: string): string {
  const text = value.trim();
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  const bare = url && (url.pathname === '/' || url.pathname === '') && !url.search && !url.hash && !url.username;
  if (!url || !bare || !['http:', 'https:'].includes(url.protocol)) {
    throw new ValidationError(`invalid origin: ${JSON.stringify(text)} (use e.g. https://shop.example.com)`);
  }
  return url.origin;
}

/** pg returns cidr[] as the text form `{a,b}` because it has no parser for it. */
function parsePgArray(value: string[] | string): string[] {
  if (Array.isArray(value)) return value;
  const inner = value.replace(/^\{|\}$/g, '');
  return inner ? inner.split(',').map((s) => s.replace(/^"|"$/g, '')) : [];
}

const iso = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString());

function toOrganization(row: Record<string, unknown>): Organization {
  return {
    id: row.id as string,
    name: row.name as string,
    planState: row.plan_state as PlanState,
    monthlyEventQuota: (row.monthly_event_quota as number | null) ?? null,
    createdAt: iso(row.created_at as Date)!,
  };
}

function toKeyRecord(row: Record<string, unknown>): ApiKeyRecord {
  return {
    id: row.id as string,
    orgId: row.org_id as string,
    type: row.type as KeyType,
    keyHint: row.key_hint as string,
    ipAllowlist: parsePgArray(row.ip_allowlist as string[] | string),
    originAllowlist: row.origin_allowlist as string[],
    ratePerMinuteCap: (row.rate_cap_per_minute as number | null) ?? null,
    createdAt: iso(row.created_at as Date)!,
    revokedAt: iso(row.revoked_at as Date | null),
    replacedBy: (row.replaced_by as string | null) ?? null,
  };
}
