import { AccountsStore, KEY_TYPES, PLAN_STATES, runMigrations, type KeyType, type PlanState } from '@svc/runtime';
import { integer, list, oneOf, type CliContext, type Command } from '../command';

/** Migrations, organisations and API keys (runtime's AccountsStore). */
export const accountCommands: Record<string, Command> = {
  migrate: {
    usage: 'migrate',
    flags: {},
    run: async (_v, ctx) => ({ applied: await runMigrations(ctx.db, ctx.migrations) }),
  },
  'org create': {
    usage: 'org create --name <name> [--monthly-quota <n>]',
    flags: { required: ['name'], optional: ['monthly-quota'] },
    run: (v, ctx) =>
      store(ctx).createOrganization({
        name: v.name!,
        monthlyEventQuota: v['monthly-quota'] === undefined ? null : integer('monthly-quota', v['monthly-quota'], 0),
      }),
  },
  'org show': {
    usage: 'org show --org <id>',
    flags: { required: ['org'] },
    run: (v, ctx) => store(ctx).getOrganization(v.org!),
  },
  'org set-state': {
    usage: `org set-state --org <id> --state <${PLAN_STATES.join('|')}>`,
    flags: { required: ['org', 'state'] },
    run: (v, ctx) => store(ctx).setPlanState(v.org!, oneOf('state', v.state!, PLAN_STATES) as PlanState),
  },
  'org set-quota': {
    usage: 'org set-quota --org <id> --monthly-quota <n|none>',
    flags: { required: ['org', 'monthly-quota'] },
    run: (v, ctx) =>
      store(ctx).setMonthlyQuota(
        v.org!,
        v['monthly-quota'] === 'none' ? null : integer('monthly-quota', v['monthly-quota']!, 0),
      ),
  },
  'key create': {
    usage: `key create --org <id> --type <${KEY_TYPES.join('|')}> [--ip-allow <cidr,...>] [--origin-allow <origin,...>] [--rate-cap <n per minute>]`,
    flags: { required: ['org', 'type'], optional: ['ip-allow', 'origin-allow', 'rate-cap'] },
    async run(v, ctx) {
      const { record, key } = await store(ctx).createApiKey({
        orgId: v.org!,
        type: oneOf('type', v.type!, KEY_TYPES) as KeyType,
        ipAllowlist: list(v['ip-allow']),
        originAllowlist: list(v['origin-allow']),
        ratePerMinuteCap: v['rate-cap'] === undefined ? null : integer('rate-cap', v['rate-cap'], 1),
      });
      return { id: record.id, key, type: record.type, orgId: record.orgId };
    },
  },
  'key list': {
    usage: 'key list --org <id>',
    flags: { required: ['org'] },
    run: async (v, ctx) => ({ keys: await store(ctx).listApiKeys(v.org!) }),
  },
  'key revoke': {
    usage: 'key revoke --id <key id>',
    flags: { required: ['id'] },
    run: (v, ctx) => store(ctx).revokeApiKey(v.id!),
  },
  'key rotate': {
    usage: 'key rotate --id <key id>',
    flags: { required: ['id'] },
    async run(v, ctx) {
      const { record, key } = await store(ctx).rotateApiKey(v.id!);
      return { id: record.id, key, type: record.type, orgId: record.orgId, replaces: v.id };
    },
  },
};

const store = (ctx: CliContext) => new AccountsStore(ctx.db);
