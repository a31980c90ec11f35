import { readToEnd } from '@svc/bus';
import type { RawLogMessage } from '@svc/contracts';
import { qualifyingConversionNames } from '@svc/conversions';
import { DataKeyReader } from '@svc/identity';
import { replayProjections } from '@svc/identity-resolver';
import type { Command } from '../command';

/**
 * Rebuilds the identity projections from the raw log (identity-resolver's
 * replay.ts): fresh tables, switched to in one commit; the old ones are kept
 * in the schema the result names. Events the live resolver had not reached
 * are stored with their outputs (`caught_up`), exactly once.
 */
export const replayCommands: Record<string, Command> = {
  replay: {
    usage: 'replay [--phone-country-code <n>]',
    summary: 'Rebuild the identity projections from the raw log, in one transaction, while the services run',
    flags: { optional: ['phone-country-code'] },
    async run(v, ctx) {
      const { bus, topics } = await ctx.bus();
      const started = Date.now();
      const report = await replayProjections({
        db: ctx.db,
        keys: new DataKeyReader(ctx.db, await ctx.rawLogMasterKeys()),
        logger: ctx.logger,
        batch: {
          hashes: await ctx.identifierHashes(),
          defaultPhoneCountryCode: v['phone-country-code'] ?? ctx.defaultPhoneCountryCode,
          // For the events the live resolver had not reached: the candidates it would have made.
          conversionNames: (orgId) => qualifyingConversionNames(ctx.db, orgId),
        },
        source: (consume) =>
          readToEnd<RawLogMessage>(bus, topics.eventsRaw, (messages) => consume(messages.map((m) => m.value))),
      });
      return { ...report, durationMs: Date.now() - started };
    },
  },
};
