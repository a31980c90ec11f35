import { identifierHashesLeft, rehashStoredIdentifiers, rewrapSubjectKeys, subjectKeysByMasterKey } from '@svc/identity';
import type { Command } from '../command';

/**
 * The raw log's master keys (libs/identity subject-keys.ts). Rotation: set
 * the new key as RAW_LOG_MASTER_KEY and the old one in
 * RAW_LOG_MASTER_KEYS_RETIRED on every gateway, resolver and svcctl;
 * `keys rewrap`; once `keys status` shows no key under the old one, drop it.
 */
export const keyCommands: Record<string, Command> = {
  'keys status': {
    usage: 'keys status',
    summary: `Show the raw log's data keys: how many under each master key`,
    flags: {},
    async run(_v, ctx) {
      const ring = await ctx.rawLogMasterKeys();
      const wrapped = await subjectKeysByMasterKey(ctx.db);
      return {
        currentMasterKeyId: ring.current.id,
        masterKeys: wrapped.map((w) => ({ ...w, held: ring.key(w.masterKeyId) !== undefined, current: w.masterKeyId === ring.current.id })),
      };
    },
  },
  'keys rewrap': {
    usage: 'keys rewrap',
    summary: 'Re-wrap every data key under the newest master key (RAW_LOG_MASTER_KEY)',
    flags: {},
    async run(_v, ctx) {
      const ring = await ctx.rawLogMasterKeys();
      const rewrapped = await rewrapSubjectKeys(ctx.db, ring);
      return { currentMasterKeyId: ring.current.id, rewrapped };
    },
  },
  /**
   * The identifier hashes' keys (libs/identity hash.ts, rehash.ts).
   * Rotation: append a key to IDENTIFIER_HASH_KEYS on every service and
   * svcctl; the resolver brings stored hashes under it within the hour (or
   * `hashes rewrap` at once); `hashes status` shows what is left. A key is
   * never removed: every one is a layer of every hash.
   */
  'hashes status': {
    usage: 'hashes status',
    summary: 'Show how many stored identifier hashes are under each key of IDENTIFIER_HASH_KEYS',
    flags: {},
    async run(_v, ctx) {
      const hashes = await ctx.identifierHashes();
      return { keys: hashes.layers, left: await identifierHashesLeft(ctx.db, hashes) };
    },
  },
  'hashes rewrap': {
    usage: 'hashes rewrap',
    summary: 'Bring every stored identifier hash under the newest key of IDENTIFIER_HASH_KEYS',
    flags: {},
    async run(_v, ctx) {
      const hashes = await ctx.identifierHashes();
      return { keys: hashes.layers, rewrapped: await rehashStoredIdentifiers(ctx.db, hashes) };
    },
  },
};
