import { pooledRandomBytes } from './aead';

/**
 * A version 7 UUID (RFC 9562): the time in milliseconds in its first 48
 * bits, then 74 random ones. Ids made one after the other sort one after
 * the other, so a btree index over them grows at its right edge instead of
 * taking every insert at a random page (what a version 4 id costs a busy
 * table: a page read, and after each checkpoint a whole page in the WAL).
 * It tells when the id was made; use it only where that is no secret.
 */
export function timeOrderedUuid(now: number = Date.now()): string {
  const b = pooledRandomBytes(16);
  b.writeUIntBE(now, 0, 6);
  b[6] = 0x70 | (b[6]! & 0x0f);
  b[8] = 0x80 | (b[8]! & 0x3f);
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
