import { preparedRaw, type Db } from '@svc/runtime';
import type { HashedIdentifier } from './hash';

/** The suppression list's one read: which of these (organisation, type, hash) are or were suppressed, and when lifted. */
export const SUPPRESSED_SQL = `select s.org_id, s.identifier_type, s.identifier_hash, s.lifted_at
  from unnest(?::uuid[], ?::text[], ?::text[]) as k (org_id, identifier_type, identifier_hash)
  join privacy.suppressions s on s.org_id = k.org_id and s.identifier_type = k.identifier_type and s.identifier_hash = k.identifier_hash`;

/**
 * Every given identifier that is or was suppressed, as
 * `${orgId}\u0000${type}\u0000${hash}`, with when its suppression was lifted
 * (null: in force). An event received before the lift stays out.
 */
export async function suppressedIdentifiers(db: Db, wanted: ReadonlyArray<HashedIdentifier & { orgId: string }>): Promise<Map<string, Date | null>> {
  if (wanted.length === 0) return new Map();
  const { rows } = (await preparedRaw(db, SUPPRESSED_SQL, [wanted.map((w) => w.orgId), wanted.map((w) => w.type), wanted.map((w) => w.hash)])) as {
    rows: Array<{ org_id: string; identifier_type: string; identifier_hash: string; lifted_at: Date | null }>;
  };
  return new Map(rows.map((r) => [`${r.org_id}\u0000${r.identifier_type}\u0000${r.identifier_hash}`, r.lifted_at]));
}

/**
 * Whether an event the gateway received at `receivedAt` (ISO time) is kept
 * out by a suppression lifted at `liftedAt` (null: in force; undefined: none).
 */
export const keptOut = (liftedAt: Date | null | undefined, receivedAt: string): boolean =>
  liftedAt === null || (liftedAt !== undefined && Date.parse(receivedAt) < liftedAt.getTime());
