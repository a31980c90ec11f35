import type { AccountsStore, VerifiedKey } from '../accounts/store';
import { hashApiKey, looksLikeApiKey } from '../accounts/api-keys';
import { isDatabaseUnavailable } from '@svc/runtime';
import type { KeyVerifier } from './authenticate';

export interface KeyCacheOptions {
  /** Keys held at most (the oldest goes first). Default 10,000. */
  maxKeys?: number;
  /**
   * While the database does not answer, a held key that the database
   * confirmed within this long is still honoured (0: never). Default 0.
   */
  outageGraceMs?: number;
  now?: () => number;
}

interface Held {
  /** As read, with the condition that confirms it on each use. */
  key: VerifiedKey;
  /** When the database last said this key was as held: read, or confirmed by a request. */
  confirmedAt: number;
}

/**
 * Keys verified by this process, held so that a request costs the database
 * one round trip instead of two. A held key comes back `unconfirmed`: the
 * edge answers on it only once the database confirms that the key and its
 * organisation are unchanged since they were read, in the same statement
 * that counts the request against its rate limits (RateLimiter.hitIf), or
 * by reading it again (`fresh`) on a path that has no such statement. So a
 * revoked, rotated or restricted key, or a paused organisation, is refused
 * on the very next request on every replica, as without a cache.
 *
 * Through a database outage (`outageGraceMs`): when a fresh read fails
 * because the database cannot be reached, a held key the database confirmed
 * within the grace is served as it was confirmed, so a service whose other
 * dependencies answer (the gateway on Kafka) keeps admitting known keys. A
 * revocation made meanwhile applies on the first request after the database
 * answers again: the held key is then confirmed, or not, as ever.
 *
 * Held by the key's hash, never the key. Only keys that verified are held;
 * an unknown key is looked up every time, as before.
 */
export class KeyCache implements KeyVerifier {
  private readonly held = new Map<string, Held>();
  /** The held entry a served key came from, so that `confirmed` can find it. */
  private readonly entryOf = new WeakMap<VerifiedKey, Held>();
  private readonly maxKeys: number;
  private readonly graceMs: number;
  private readonly now: () => number;

  constructor(
    private readonly accounts: Pick<AccountsStore, 'readApiKey'>,
    options: KeyCacheOptions = {},
  ) {
    this.maxKeys = options.maxKeys ?? 10_000;
    this.graceMs = options.outageGraceMs ?? 0;
    this.now = options.now ?? Date.now;
  }

  async verifyApiKey(key: string, options: { fresh?: boolean } = {}): Promise<VerifiedKey | undefined> {
    if (!looksLikeApiKey(key)) return undefined;
    const hash = hashApiKey(key).toString('base64');
    const held = this.held.get(hash);
    if (!options.fresh && held) return held.key;
    let read;
    try {
      read = await this.accounts.readApiKey(key);
    } catch (err) {
      if (held && this.graceMs > 0 && isDatabaseUnavailable(err) && this.now() - held.confirmedAt <= this.graceMs) return this.throughOutage(held);
      this.held.delete(hash);
      throw err;
    }
    this.held.delete(hash);
    if (!read) return undefined;
    // The oldest goes first: a map iterates in insertion order.
    if (this.held.size >= this.maxKeys) this.held.delete(this.held.keys().next().value!);
    const entry: Held = { key: { ...read.key, unconfirmed: read.unchanged }, confirmedAt: this.now() };
    this.held.set(hash, entry);
    this.entryOf.set(entry.key, entry);
    return read.key;
  }

  /** Whether `key` is held as verified (no lookup): a throttled address may still use it. */
  holds(key: string): boolean {
    return looksLikeApiKey(key) && this.held.has(hashApiKey(key).toString('base64'));
  }

  /** The database has just confirmed `key`, a held key this cache served, unchanged (RateLimiter.hitIf counted with it). */
  confirmed(key: VerifiedKey): void {
    const entry = this.entryOf.get(key);
    if (entry) entry.confirmedAt = this.now();
  }

  /** The held key as the database last confirmed it, marked as served through an outage. */
  private throughOutage(held: Held): VerifiedKey {
    const { unconfirmed: _, ...key } = held.key;
    return { ...key, servedThroughOutage: true };
  }
}
