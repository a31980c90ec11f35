import { WARNING_KINDS, readWarnings, type WarningKind } from '@svc/identity';
import { AccountsStore } from '@svc/accounts';
import { integer, oneOf, type Command } from '../command';

/**
 * An organisation's ingestion warnings (libs/identity warnings.ts): what its
 * events were stored despite (an unreadable phone, a clamped timestamp,
 * properties or traits over a soft cap), counted by kind over the newest
 * thousand kept, and the newest of them.
 */
export const warningCommands: Record<string, Command> = {
  warnings: {
    usage: `warnings --org <id> [--kind <${WARNING_KINDS.join('|')}>] [--limit <n>]`,
    summary: `Read an organisation's ingestion warnings: counts by kind and the newest`,
    flags: { required: ['org'], optional: ['kind', 'limit'] },
    async run(v, ctx) {
      const kind = v.kind === undefined ? undefined : (oneOf('kind', v.kind, WARNING_KINDS) as WarningKind);
      const limit = v.limit === undefined ? 100 : integer('limit', v.limit, 1);
      await new AccountsStore(ctx.db).getOrganization(v.org!);
      return readWarnings(ctx.db, v.org!, { limit, ...(kind ? { kind } : {}) });
    },
  },
};
