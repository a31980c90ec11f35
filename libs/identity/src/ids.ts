import { hash } from 'node:crypto';
import type { SignalType } from './signals';

/**
 * Identifiers the resolver derives instead of drawing at random, so that
 * replaying the raw topic into empty projections gives events and profiles
 * the ids they had before, and every id ever handed out keeps resolving.
 */

function digest(parts: readonly string[]): Buffer {
  // crypto.hash: one call, no Hash object (about 40% less per id than createHash; several ids an event).
  return hash('sha256', parts.join('\u0000'), 'buffer');
}

/** A UUID (version 8, "custom") from the first 128 bits of a SHA-256. */
function uuidFrom(sha256: Buffer): string {
  const b = Buffer.from(sha256.subarray(0, 16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x80;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

function base32(bytes: Buffer, chars: number): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < chars) {
      out += CROCKFORD[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
    if (out.length >= chars) break;
  }
  return out;
}

/** The stored event's id: one per (organisation, messageId), whoever stores it first. */
export function eventIdFor(orgId: string, messageId: string): string {
  return uuidFrom(digest(['event', orgId, messageId]));
}

export interface ProfileIds {
  id: string;
  canonicalId: string;
}

/**
 * A new profile's id and canonical_id, from the signal that caused it to be
 * made (its seed). A seed signal is inserted together with the profile and
 * signals are never deleted, so no seed can make a second profile: both ids
 * are unique within the organisation, and stable for the profile's life.
 *
 * canonical_id is `prf_` + 26 Crockford base-32 characters (130 bits) of a
 * hash; it carries no personal data and never changes, also not when the
 * profile is identified, merged into another, or merged into.
 */
export function profileIdsFor(orgId: string, seedType: SignalType, seedValue: string): ProfileIds {
  return {
    id: uuidFrom(digest(['profile', orgId, seedType, seedValue])),
    canonicalId: `prf_${base32(digest(['canonical', orgId, seedType, seedValue]), 26)}`,
  };
}

/**
 * The transaction-level advisory lock key of one identity signal: a signed
 * 64-bit integer (as a decimal string) from the hash of (org, type, value).
 * A collision only makes two unrelated identities wait for each other.
 */
export function signalLockKey(orgId: string, type: SignalType, value: string): bigint {
  return digest(['signal-lock', orgId, type, value]).readBigInt64BE(0);
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A fixed advisory lock key for a named singleton job (such as the outbox relay). */
export function namedLockKey(name: string): bigint {
  return digest(['named-lock', name]).readBigInt64BE(0);
}
