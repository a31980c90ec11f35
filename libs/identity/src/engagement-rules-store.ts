import { DEFAULT_ENGAGEMENT_RULES, checkEngagementRules, type EngagementRules } from '@svc/contracts';
import type { Db } from '@svc/runtime';
import { DEFAULT_COMPILED_RULES, compileEngagementRules, type CompiledEngagementRules } from './engagement';

/**
 * identity.engagement_rules: one rules document per organisation, written by
 * `svcctl rules set` (after checkEngagementRules), read by every batch.
 */

export interface StoredEngagementRules {
  orgId: string;
  /** false: nothing stored, `rules` is the default rule set. */
  configured: boolean;
  rules: EngagementRules;
  updatedAt: string | null;
}

interface Row {
  org_id: string;
  rules: unknown;
  updated_at: Date;
}

function view(orgId: string, row: Row | undefined): StoredEngagementRules {
  if (!row) return { orgId, configured: false, rules: DEFAULT_ENGAGEMENT_RULES, updatedAt: null };
  const check = checkEngagementRules(row.rules);
  // A document written around svcctl is shown as stored (and scores nothing; see compileStoredEngagementRules).
  return { orgId, configured: true, rules: check.ok ? check.rules : (row.rules as EngagementRules), updatedAt: row.updated_at.toISOString() };
}

/** Stores (replaces) the organisation's rules: a document checkEngagementRules accepted. They apply to events stored from the next batch on. */
export async function setEngagementRules(db: Db, orgId: string, rules: EngagementRules): Promise<StoredEngagementRules> {
  const { rows } = (await db.raw(
    `insert into identity.engagement_rules (org_id, rules) values (?, ?::jsonb)
     on conflict (org_id) do update set rules = excluded.rules, updated_at = now()
     returning org_id, rules, updated_at`,
    [orgId, JSON.stringify(rules)],
  )) as { rows: Row[] };
  return view(orgId, rows[0]);
}

/** The organisation's rules, or the default rule set when none are stored. */
export async function getEngagementRules(db: Db, orgId: string): Promise<StoredEngagementRules> {
  const row = (await db('identity.engagement_rules').where({ org_id: orgId }).first('org_id', 'rules', 'updated_at')) as Row | undefined;
  return view(orgId, row);
}

/**
 * The compiled rules of each organisation (the default rule set for those
 * with none), from the stored rows the caller read (the resolver reads them
 * with the rest of its batch's state). A stored document that no longer
 * passes the check (written around svcctl) scores nothing rather than holding
 * up ingestion; its organisation is listed in `invalid` for the caller to report.
 */
export function compileStoredEngagementRules(
  orgIds: readonly string[],
  rows: ReadonlyArray<{ org_id: string; rules: unknown }>,
): { rules: Map<string, CompiledEngagementRules>; invalid: string[] } {
  const rules = new Map<string, CompiledEngagementRules>(orgIds.map((id) => [id, DEFAULT_COMPILED_RULES]));
  const invalid: string[] = [];
  for (const row of rows) {
    const check = checkEngagementRules(row.rules);
    if (check.ok) rules.set(row.org_id, compileEngagementRules(check.rules));
    else invalid.push(row.org_id);
  }
  return { rules, invalid };
}
