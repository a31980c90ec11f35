import type { Db } from '@svc/runtime';
import { eventIdentifierHashes, keptOut, suppressedIdentifiers, type IdentifierHashes } from '@svc/identity';
import type { PreparedEvent } from './prepare';

/**
 * The events of a batch that carry no suppressed identifier (an erased
 * person's userId, email, phone, anonymousId or alias previousId, hashed per
 * organisation as privacy.suppressions keeps them). The rest are dropped
 * before anything of them is stored, and so is an event received before a
 * suppression of its identifier was lifted (unsuppress lets new events in,
 * and only those): on the live path and in a replay alike
 * (the suppression list is outside the `identity` schema a replay rebuilds),
 * so an erased person never comes back from the raw log. One indexed
 * statement per batch. Called after the identity locks: an erasure holds the
 * same locks, so it either committed before (its suppressions are seen) or
 * waits for this batch and erases what it stored.
 */
export async function withoutSuppressed(trx: Db, events: readonly PreparedEvent[], hashes: IdentifierHashes): Promise<readonly PreparedEvent[]> {
  const hashed = events.map((e) => eventIdentifierHashes(hashes, e.orgId, e.identity).map((h) => ({ ...h, orgId: e.orgId })));
  const suppressed = await suppressedIdentifiers(trx, hashed.flat());
  if (suppressed.size === 0) return events;
  return events.filter((e, i) => !hashed[i]!.some((h) => keptOut(suppressed.get(`${h.orgId}\u0000${h.type}\u0000${h.hash}`), e.receivedAt)));
}
