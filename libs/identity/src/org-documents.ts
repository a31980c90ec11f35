import type { Db } from '@svc/runtime';

/**
 * One configuration document per organisation in a table of
 * `(org_id primary key, rules jsonb, updated_at)`: the engagement rules and
 * the identity rules. svcctl stores a document only once its check accepted
 * it; reading shows what is stored (or the defaults when nothing is).
 */
export interface StoredDocument<T> {
  orgId: string;
  /** false: nothing stored, `rules` are the defaults. */
  configured: boolean;
  rules: T;
  updatedAt: string | null;
}

interface Row {
  org_id: string;
  rules: unknown;
  updated_at: Date;
}

type Check<T> = (doc: unknown) => { ok: true; rules: T } | { ok: false };

export interface OrgDocumentStore<T> {
  /** Stores (replaces) the organisation's document: one its check accepted. */
  set(db: Db, orgId: string, rules: T): Promise<StoredDocument<T>>;
  /** The organisation's document, or the defaults when none is stored. */
  get(db: Db, orgId: string): Promise<StoredDocument<T>>;
}

export function orgDocumentStore<T>(table: string, check: Check<T>, defaults: T): OrgDocumentStore<T> {
  const view = (orgId: string, row: Row | undefined): StoredDocument<T> => {
    if (!row) return { orgId, configured: false, rules: defaults, updatedAt: null };
    const checked = check(row.rules);
    // A document written around svcctl is shown as stored (the services apply the defaults instead).
    return { orgId, configured: true, rules: checked.ok ? checked.rules : (row.rules as T), updatedAt: row.updated_at.toISOString() };
  };
  return {
    async set(db, orgId, rules) {
      const { rows } = (await db.raw(
        `insert into ?? (org_id, rules) values (?, ?::jsonb)
         on conflict (org_id) do update set rules = excluded.rules, updated_at = now()
         returning org_id, rules, updated_at`,
        [table, orgId, JSON.stringify(rules)],
      )) as { rows: Row[] };
      return view(orgId, rows[0]);
    },
    async get(db, orgId) {
      return view(orgId, (await db(table).where({ org_id: orgId }).first('org_id', 'rules', 'updated_at')) as Row | undefined);
    },
  };
}
