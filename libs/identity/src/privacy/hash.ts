import { hash } from 'node:crypto';
import type { ErasableIdentifierType } from '@svc/contracts';
import { normaliseEmail, normalisePhone, type EventIdentity } from '../signals';

/**
 * How an erased person's identifiers are kept: never in clear, only as
 * SHA-256 hex of `<orgId> U+0000 <type> U+0000 <normalised value>`. The
 * organisation is part of the hash, so the same email in two organisations
 * gives two unrelated hashes (and one organisation's suppression never
 * matches another's events). Values are normalised exactly as the resolver
 * normalises its signals (libs/identity signals.ts), so `Ann@Example.com `
 * and `ann@example.com` are one suppressed email. Pure, no I/O.
 */
export function identifierHash(orgId: string, type: ErasableIdentifierType, value: string): string {
  return hash('sha256', `${orgId}\u0000${type}\u0000${value}`, 'hex');
}

/** A click ID as the tombstone names it: SHA-256 hex of `<orgId> U+0000 <click type> U+0000 <click id>`. */
export function clickIdHash(orgId: string, clickType: string, clickId: string): string {
  return hash('sha256', `${orgId}\u0000${clickType}\u0000${clickId}`, 'hex');
}

/**
 * The normalised value of an identifier as an operator gives it, or null
 * when it cannot be one (an email that is not one, a phone that is not one,
 * an empty or over-long id).
 */
export function normaliseIdentifier(type: ErasableIdentifierType, raw: string, defaultPhoneCountryCode?: string): string | null {
  switch (type) {
    case 'email':
      return normaliseEmail(raw);
    case 'phone':
      return normalisePhone(raw, defaultPhoneCountryCode);
    default:
      return raw.length > 0 && raw.length <= 200 && !raw.includes('\u0000') ? raw : null;
  }
}

export interface HashedIdentifier {
  type: ErasableIdentifierType;
  hash: string;
}

/**
 * Every identifier an event carries, hashed for its organisation: userId,
 * email, phone, anonymousId, and an alias's previousId (as a user id and as
 * an anonymous id, as the resolver looks it up). An event carrying any one
 * that is suppressed is dropped before it is stored.
 */
export function eventIdentifierHashes(orgId: string, identity: EventIdentity): HashedIdentifier[] {
  const out: HashedIdentifier[] = [{ type: 'anonymous_id', hash: identifierHash(orgId, 'anonymous_id', identity.anonymousId) }];
  if (identity.userId !== null) out.push({ type: 'user_id', hash: identifierHash(orgId, 'user_id', identity.userId) });
  if (identity.email !== null) out.push({ type: 'email', hash: identifierHash(orgId, 'email', identity.email) });
  if (identity.phone !== null) out.push({ type: 'phone', hash: identifierHash(orgId, 'phone', identity.phone) });
  if (identity.previousId !== null) {
    out.push(
      { type: 'user_id', hash: identifierHash(orgId, 'user_id', identity.previousId) },
      { type: 'anonymous_id', hash: identifierHash(orgId, 'anonymous_id', identity.previousId) },
    );
  }
  return out;
}
