import { rewrapSubjectKeys, subjectKeysByMasterKey } from '@svc/identity';
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
    flags: {},
    async run(_v, ctx) {
      const ring = await ctx.rawLogMasterKeys();
      const rewrapped = await rewrapSubjectKeys(ctx.db, ring);
      return { currentMasterKeyId: ring.current.id, rewrapped };
    },
  },
};
