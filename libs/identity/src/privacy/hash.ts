import { createHash, createHmac, hash } from 'node:crypto';
import type { ErasableIdentifierType } from '@svc/contracts';
import { normaliseEmail, normalisePhone, type EventIdentity, type PhoneDefault } from '../signals';

/**
 * How an erased person's identifiers are kept: never in clear, and never as
 * anything a copy of the database alone can reverse. The base is SHA-256
 * hex of `<orgId> U+0000 <type> U+0000 <normalised value>` (the
 * organisation is part of it, so one email in two organisations gives two
 * unrelated hashes); over it go HMAC-SHA256 layers, one per key of
 * IDENTIFIER_HASH_KEYS (oldest first):
 *
 *   layer 0 = the SHA-256 hex above (what rows held before keys existed)
 *   layer i = HMAC-SHA256(key i, layer i-1 as text), hex
 *
 * stored as `k<i>.<hex>`. Without the keys, a phone number or a common
 * email cannot be found by hashing candidates. Layering over the stored
 * value is what lets a row be brought to a new key without its value
 * (`rewrap`): the migration from unkeyed rows, and every rotation, are a
 * pass over the rows with the keys alone (rehash.ts).
 *
 * While rows are brought to the newest key, a look-up finds a value in
 * either of its last two forms (`lookups`): the previous form costs nothing
 * more, it is the step before the last. Values are normalised exactly as
 * the resolver normalises its signals (libs/identity signals.ts), so
 * `Ann@Example.com ` and `ann@example.com` are one suppressed email.
 */
export class IdentifierHashes {
  private readonly keys: readonly Buffer[];

  constructor(keys: readonly Buffer[]) {
    if (keys.length === 0) throw new Error('identifier hashes need at least one key (IDENTIFIER_HASH_KEYS)');
    if (keys.length > 999) throw new Error('identifier hashes: at most 999 keys');
    this.keys = [...keys];
  }

  /** How many keyed layers a hash made now has. */
  get layers(): number {
    return this.keys.length;
  }

  /** Each key's id, oldest first: a hash of the key (never the key), for telling lists apart (checkIdentifierHashKeys). */
  keyIds(): string[] {
    return this.keys.map((key) => createHash('sha256').update('svc identifier hash key\u0000').update(key).digest('hex').slice(0, 16));
  }

  /**
   * A value as it is stored, under its kind: an identifier type
   * (suppressions, erasure requests, raw-log keys, the audit log,
   * tombstones), a click type (a tombstone's click IDs), or the name of a
   * redacted field (the forwarder's sent conversions).
   */
  of(orgId: string, kind: string, value: string): string {
    return stored(this.published(orgId, kind, value), this.keys.length);
  }

  /**
   * A value as a tombstone (profiles.erased) carries it: the same hash as
   * `of`, as bare hex, without the `k<layers>.` prefix, which the topic's
   * schema (registered before keyed hashes, 64 hex digits) does not admit.
   * A consumer matches it in either of its last two forms (`sqlMatches`).
   */
  published(orgId: string, kind: string, value: string): string {
    return this.layered(baseHash(orgId, kind, value), 0, this.keys.length);
  }

  /** The forms an identifier may be stored in: under every key, and under all but the newest (rows not yet rewrapped). */
  lookups(orgId: string, type: ErasableIdentifierType, value: string): [string, string] {
    const n = this.keys.length;
    const previous = this.layered(baseHash(orgId, type, value), 0, n - 1);
    return [stored(this.layered(previous, n - 1, n), n), stored(previous, n - 1)];
  }

  /** A stored hash brought under every key (unchanged when it is already); undefined when it is not a stored hash, or has more layers than this process has keys. */
  rewrap(hash: string): string | undefined {
    const parsed = parseStoredHash(hash);
    if (!parsed || parsed.layers > this.keys.length) return undefined;
    return parsed.layers === this.keys.length ? hash : stored(this.layered(parsed.hex, parsed.layers, this.keys.length), this.keys.length);
  }

  /**
   * SQL computing, in the database, the stored form of a base hash under
   * every key, for statements that redact with it. `baseHex` is an SQL text
   * expression (the SHA-256 hex, baseHashSql); the keys go as named
   * bindings (`sqlBindings()`), never into the statement's text, so they
   * cannot reach a log. HMAC is sha256((key ^ opad) || sha256((key ^ ipad)
   * || message)), with nothing but PostgreSQL's own sha256().
   */
  sql(baseHex: string): string {
    return storedSql(this.sqlLayers(baseHex, 0, this.keys.length), this.keys.length);
  }

  /**
   * SQL: whether a base hash, under every key or under all but the newest,
   * is one of the text array `hashesSql` (a tombstone's `published` hashes,
   * made by a process that may not have had the newest key yet).
   */
  sqlMatches(baseHex: string, hashesSql: string): string {
    const n = this.keys.length;
    return `exists (select 1 from (select ${this.sqlLayers(baseHex, 0, n - 1)} as h) p
      where p.h = any(${hashesSql}) or ${this.sqlLayers('p.h', n - 1, n)} = any(${hashesSql}))`;
  }

  private sqlLayers(hex: string, from: number, to: number): string {
    let out = hex;
    for (let i = from + 1; i <= to; i++) out = `encode(sha256(:hk_opad_${i}::bytea || sha256(:hk_ipad_${i}::bytea || convert_to(${out}, 'UTF8'))), 'hex')`;
    return out;
  }

  /** The named bindings `sql` uses: each key's HMAC pads. */
  sqlBindings(): Record<string, Buffer> {
    const out: Record<string, Buffer> = {};
    this.keys.forEach((key, i) => {
      const { ipad, opad } = hmacPads(key);
      out[`hk_ipad_${i + 1}`] = ipad;
      out[`hk_opad_${i + 1}`] = opad;
    });
    return out;
  }

  /** Hex of layer `to` from hex of layer `from`: an HMAC under each key between. */
  private layered(hex: string, from: number, to: number): string {
    let out = hex;
    for (let i = from; i < to; i++) out = createHmac('sha256', this.keys[i]!).update(out, 'utf8').digest('hex');
    return out;
  }
}

/** SQL: the base (unkeyed) hash of `<org_id column> U+0000 <type> U+0000 <value>`, for IdentifierHashes.sql. */
export const baseHashSql = (orgIdSql: string, typeSql: string, valueSql: string): string =>
  `encode(sha256(convert_to(${orgIdSql}::text, 'UTF8') || '\\x00'::bytea || convert_to(${typeSql}, 'UTF8') || '\\x00'::bytea || convert_to(${valueSql}, 'UTF8')), 'hex')`;

/** The stored form of a hash's hex with `layers` layers: `k<layers>.<hex>`, or the bare hex of an unkeyed one. */
const stored = (hex: string, layers: number): string => (layers === 0 ? hex : `k${layers}.${hex}`);
const storedSql = (hex: string, layers: number): string => (layers === 0 ? hex : `'k${layers}.' || ${hex}`);

const baseHash = (orgId: string, type: string, value: string): string => hash('sha256', `${orgId}\u0000${type}\u0000${value}`, 'hex');

const STORED = /^(?:k([1-9][0-9]{0,2})\.)?([0-9a-f]{64})$/;

/** The layer count and hex of a stored hash, or undefined for anything else (an id, a count, a reason). */
export function parseStoredHash(stored: string): { layers: number; hex: string } | undefined {
  const m = STORED.exec(stored);
  return m ? { layers: m[1] ? Number(m[1]) : 0, hex: m[2]! } : undefined;
}

/** A key's two HMAC pads (a key longer than the block is hashed first, as HMAC does). */
function hmacPads(key: Buffer): { ipad: Buffer; opad: Buffer } {
  const block = Buffer.alloc(64);
  (key.length > 64 ? createHash('sha256').update(key).digest() : key).copy(block);
  const ipad = Buffer.alloc(64);
  const opad = Buffer.alloc(64);
  for (let i = 0; i < 64; i++) {
    ipad[i] = block[i]! ^ 0x36;
    opad[i] = block[i]! ^ 0x5c;
  }
  return { ipad, opad };
}

/**
 * The normalised value of an identifier as an operator gives it, or null
 * when it cannot be one (an email that is not one, a phone that is not one,
 * an empty or over-long id).
 */
export function normaliseIdentifier(type: ErasableIdentifierType, raw: string, phoneDefault?: PhoneDefault): string | null {
  switch (type) {
    case 'email':
      return normaliseEmail(raw);
    case 'phone':
      return normalisePhone(raw, phoneDefault);
    default:
      return raw.length > 0 && raw.length <= 200 && !raw.includes('\u0000') ? raw : null;
  }
}

export interface HashedIdentifier {
  type: ErasableIdentifierType;
  hash: string;
}

/**
 * Every identifier an event carries, in every form it may be stored in
 * (IdentifierHashes.lookups): userId, email, phone, anonymousId, and an
 * alias's previousId (as a user id and as an anonymous id, as the resolver
 * looks it up). An event carrying any one that is suppressed is dropped
 * before it is stored.
 */
export function eventIdentifierHashes(hashes: IdentifierHashes, orgId: string, identity: EventIdentity): HashedIdentifier[] {
  const out: HashedIdentifier[] = [];
  const add = (type: ErasableIdentifierType, value: string) => {
    for (const hash of hashes.lookups(orgId, type, value)) out.push({ type, hash });
  };
  add('anonymous_id', identity.anonymousId);
  if (identity.userId !== null) add('user_id', identity.userId);
  if (identity.email !== null) add('email', identity.email);
  if (identity.phone !== null) add('phone', identity.phone);
  if (identity.previousId !== null) {
    add('user_id', identity.previousId);
    add('anonymous_id', identity.previousId);
  }
  return out;
}
