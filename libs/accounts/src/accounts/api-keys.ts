import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

export const KEY_TYPES = ['write', 'read', 'admin'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

export const KEY_PREFIXES: Readonly<Record<KeyType, string>> = {
  write: 'uk_live_',
  read: 'uk_read_',
  admin: 'uk_admin_',
};

const SECRET_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 40; // ~238 bits of entropy
const KEY_SHAPE = /^uk_(live|read|admin)_[0-9A-Za-z]{40}$/;

/** A new random key of `type`, e.g. `uk_live_…`. Shown once, never stored. */
export function generateApiKey(type: KeyType): string {
  const bytes = randomBytes(SECRET_LENGTH * 2);
  let secret = '';
  // Rejection sampling keeps every character equally likely (62 does not divide 256).
  for (const b of bytes) {
    if (b < 248) secret += SECRET_ALPHABET[b % 62];
    if (secret.length === SECRET_LENGTH) break;
  }
  if (secret.length < SECRET_LENGTH) return generateApiKey(type);
  return KEY_PREFIXES[type] + secret;
}

/**
 * The stored form of a key. Keys carry over 200 bits of entropy, so a plain
 * SHA-256 is not brute-forceable and keeps verification cheap on the hot path.
 */
export function hashApiKey(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

/** Whether `key` has the shape of a key we issue; rejects junk before any look-up. */
export function looksLikeApiKey(key: string): boolean {
  return KEY_SHAPE.test(key);
}

/** Constant-time equality of two key hashes. */
export function hashesEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The displayable start of a key, e.g. `uk_live_AbC1…`. */
export function keyHint(key: string): string {
  return `${key.slice(0, key.indexOf('_', 3) + 5)}…`;
}

export type ParsedAuthorization =
  | { ok: true; key: string }
  | { ok: false; problem: 'missing' | 'format' | 'empty' };

/** Parses an Authorization header value of the form `Bearer <api_key>`. */
export function parseAuthorization(header: string | undefined): ParsedAuthorization {
  if (header === undefined) return { ok: false, problem: 'missing' };
  const match = /^Bearer(?:\s+(.*))?$/i.exec(header.trim());
  if (!match) return { ok: false, problem: header.trim() === '' ? 'missing' : 'format' };
  const key = (match[1] ?? '').trim();
  return key === '' ? { ok: false, problem: 'empty' } : { ok: true, key };
}
