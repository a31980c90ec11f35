import { rehashStoredIdentifiers, type IdentifierHashes } from '@svc/identity';
import type { Db, Logger } from '@svc/runtime';

/** How often the resolver looks for stored identifier hashes under fewer keys than it has. */
export const REHASH_INTERVAL_MS = 60 * 60_000;

/**
 * Brings stored identifier hashes under the newest key of
 * IDENTIFIER_HASH_KEYS (libs/identity rehash.ts): once at start, then every
 * REHASH_INTERVAL_MS, so a key appended to the list, or a database from
 * before keyed hashes, is migrated without an operator's step (and rows an
 * older process wrote during a rolling restart are caught by the next
 * pass). Failures are logged and tried again at the next pass; look-ups find
 * rows in their previous form meanwhile.
 */
export function startRehashing(o: { db: Db; hashes: IdentifierHashes; logger: Logger; intervalMs?: number }): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const pass = () => {
    running = rehashStoredIdentifiers(o.db, o.hashes).then(
      (counts) => {
        if (Object.values(counts).some((n) => n > 0)) o.logger.info({ counts, keys: o.hashes.layers }, 'identifier hashes brought under the newest key');
      },
      (err: unknown) => {
        if (!stopped) o.logger.warn({ err }, 'identifier hashes: rewrap pass failed; next pass in an hour');
      },
    );
  };
  pass();
  const timer = setInterval(() => {
    if (!stopped) pass();
  }, o.intervalMs ?? REHASH_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
