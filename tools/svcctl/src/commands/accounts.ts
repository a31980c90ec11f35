import { runMigrations } from '@svc/runtime';
import { AccountsStore, KEY_TYPES, PLAN_STATES, type KeyType, type PlanState } from '@svc/accounts';
import { integer, list, oneOf, type CliContext, type Command } from '../command';

/** Migrations, organisations and API keys (runtime's AccountsStore). */
export const accountCommands: Record<string, Command> = {
  migrate: {
    usage: 'migrate',
    summary: 'Bring every schema of the database up to date (every command does this first)',
    flags: {},
    run: async (_v, ctx) => ({ applied: await runMigrations(ctx.db, ctx.migrations) }),
  },
  'org create': {
    usage: 'org create --name <name> [--monthly-quota <n>]',
    summary: 'Create an organisation; prints it with its id',
    flags: { required: ['name'], optional: ['monthly-quota'] },
    run: (v, ctx) =>
      store(ctx).createOrganization({
        name: v.name!,
        monthlyEventQuota: v['monthly-quota'] === undefined ? null : integer('monthly-quota', v['monthly-quota'], 0),
      }),
  },
  'org show': {
    usage: 'org show --org <id>',
    summary: 'Show an organisation: name, plan state, monthly quota',
    flags: { required: ['org'] },
    run: (v, ctx) => store(ctx).getOrganization(v.org!),
  },
  'org set-state': {
    usage: `org set-state --org <id> --state <${PLAN_STATES.join('|')}>`,
    summary: `Set an organisation's plan state (paused stops its ingestion)`,
    flags: { required: ['org', 'state'] },
    run: (v, ctx) => store(ctx).setPlanState(v.org!, oneOf('state', v.state!, PLAN_STATES) as PlanState),
  },
  'org set-quota': {
    usage: 'org set-quota --org <id> --monthly-quota <n|none>',
    summary: `Set or clear an organisation's monthly event quota`,
    flags: { required: ['org', 'monthly-quota'] },
    run: (v, ctx) =>
      store(ctx).setMonthlyQuota(
        v.org!,
        v['monthly-quota'] === 'none' ? null : integer('monthly-quota', v['monthly-quota']!, 0),
      ),
  },
  'key create': {
    usage: `key create --org <id> --type <${KEY_TYPES.join('|')}> [--ip-allow <cidr,...>] [--origin-allow <origin,...>] [--rate-cap <n per minute>]`,
    summary: 'Create an API key; prints the key once (only its hash is stored)',
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
    summary: `List an organisation's keys (never the keys themselves)`,
    flags: { required: ['org'] },
    run: async (v, ctx) => ({ keys: await store(ctx).listApiKeys(v.org!) }),
  },
  'key revoke': {
    usage: 'key revoke --id <key id>',
    summary: 'Revoke a key: it stops working at once',
    flags: { required: ['id'] },
    run: (v, ctx) => store(ctx).revokeApiKey(v.id!),
  },
  'key rotate': {
    usage: 'key rotate --id <key id>',
    summary: 'Replace a key: a new one of the same type and limits (printed once), and the old one stops working',
    flags: { required: ['id'] },
    async run(v, ctx) {
      const { record, key } = await store(ctx).rotateApiKey(v.id!);
      return { id: record.id, key, type: record.type, orgId: record.orgId, replaces: v.id };
    },
  },
};

const store = (ctx: CliContext) => new AccountsStore(ctx.db);
