import { DEFAULT_ENGAGEMENT_RULES, checkEngagementRules, type EngagementRules } from '@svc/contracts';
import { DEFAULT_COMPILED_RULES, compileEngagementRules, type CompiledEngagementRules } from './engagement';
import { orgDocumentStore, type StoredDocument } from './org-documents';

/**
 * identity.engagement_rules: one rules document per organisation, written by
 * `svcctl rules set` (after checkEngagementRules), read by every batch.
 */

export type StoredEngagementRules = StoredDocument<EngagementRules>;

const store = orgDocumentStore('identity.engagement_rules', checkEngagementRules, DEFAULT_ENGAGEMENT_RULES);

/**
 * Stores (replaces) the organisation's rules: a document checkEngagementRules
 * accepted. They apply to events stored from the next batch on. (A document
 * written around svcctl is shown as stored, and scores nothing: see
 * compileStoredEngagementRules.)
 */
export const setEngagementRules = store.set;

/** The organisation's rules, or the default rule set when none are stored. */
export const getEngagementRules = store.get;

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
