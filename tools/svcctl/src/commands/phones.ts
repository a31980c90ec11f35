import { queuePhoneRestatement } from '@svc/identity';
import { AccountsStore } from '@svc/accounts';
import type { Command } from '../command';

/**
 * Phone numbers read again (libs/identity phone-restatement.ts): after the
 * deployment's PHONE_DEFAULT_COUNTRY_CODE changed, say. The identity resolver
 * carries it out in the background; an organisation's identity rules queue
 * it themselves when they change its region.
 */
export const phoneCommands: Record<string, Command> = {
  'phones restate': {
    usage: 'phones restate [--org <id>]',
    summary: `Have the resolver read stored phone numbers again under today's rules (one organisation, or every one)`,
    flags: { optional: ['org'] },
    async run(v, ctx) {
      if (v.org !== undefined) await new AccountsStore(ctx.db).getOrganization(v.org);
      return { orgId: v.org ?? null, queued: await queuePhoneRestatement(ctx.db, v.org ?? null) };
    },
  },
};
