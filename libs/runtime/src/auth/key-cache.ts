import type { AccountsStore, VerifiedKey } from '../accounts/store';
import { hashApiKey, looksLikeApiKey } from '../accounts/api-keys';
import type { KeyVerifier } from './authenticate';

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
 * Held by the key's hash, never the key. Only keys that verified are held;
 * an unknown key is looked up every time, as before.
 */
export class KeyCache implements KeyVerifier {
  private readonly held = new Map<string, VerifiedKey>();

  constructor(
    private readonly accounts: Pick<AccountsStore, 'readApiKey'>,
    private readonly maxKeys = 10_000,
  ) {}

  async verifyApiKey(key: string, options: { fresh?: boolean } = {}): Promise<VerifiedKey | undefined> {
    if (!looksLikeApiKey(key)) return undefined;
    const hash = hashApiKey(key).toString('base64');
    if (!options.fresh) {
      const held = this.held.get(hash);
      if (held) return held;
    }
    this.held.delete(hash);
    const read = await this.accounts.readApiKey(key);
    if (!read) return undefined;
    // The oldest goes first: a map iterates in insertion order.
    if (this.held.size >= this.maxKeys) this.held.delete(this.held.keys().next().value!);
    this.held.set(hash, { ...read.key, unconfirmed: read.unchanged });
    return read.key;
  }
}
