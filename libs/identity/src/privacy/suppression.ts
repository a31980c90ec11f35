import { preparedRaw, type Db } from '@svc/runtime';
import type { HashedIdentifier } from './hash';

/** The suppression list's one read: which of these (organisation, type, hash) are suppressed. */
export const SUPPRESSED_SQL = `select s.org_id, s.identifier_type, s.identifier_hash
  from unnest(?::uuid[], ?::text[], ?::text[]) as k (org_id, identifier_type, identifier_hash)
  join privacy.suppressions s on s.org_id = k.org_id and s.identifier_type = k.identifier_type and s.identifier_hash = k.identifier_hash`;

/** `${orgId}\u0000${type}\u0000${hash}` of every given identifier that is suppressed. */
export async function suppressedIdentifiers(db: Db, wanted: ReadonlyArray<HashedIdentifier & { orgId: string }>): Promise<Set<string>> {
  if (wanted.length === 0) return new Set();
  const { rows } = (await preparedRaw(db, SUPPRESSED_SQL, [wanted.map((w) => w.orgId), wanted.map((w) => w.type), wanted.map((w) => w.hash)])) as {
    rows: Array<{ org_id: string; identifier_type: string; identifier_hash: string }>;
  };
  return new Set(rows.map((r) => `${r.org_id}\u0000${r.identifier_type}\u0000${r.identifier_hash}`));
}
