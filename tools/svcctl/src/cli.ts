import { parseArgs } from 'node:util';
import { AccountsStore, KEY_TYPES, PLAN_STATES, runMigrations, type KeyType, type PlanState } from '@svc/runtime';
import { UsageError, Verbatim, integer, list, oneOf, type CliContext, type Command, type Values } from './command';
import { connectorCommands } from './commands/connectors';
import { dlqCommands } from './commands/dlq';
import { replayCommands } from './commands/replay';
import { ruleCommands } from './commands/rules';

export { UsageError, type CliContext } from './command';

const COMMANDS: Record<string, Command> = {
  ...connectorCommands,
  ...ruleCommands,
  ...replayCommands,
  ...dlqCommands,
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

/** Usage lines of every command, for `help` and for usage errors. */
export const USAGE = Object.values(COMMANDS).map((c) => `svcctl ${c.usage}`);

/** Finds the command named by the leading words of `argv`, or throws a UsageError. */
export function resolveCommand(argv: readonly string[]): { name: string; command: Command; rest: string[] } {
  for (const words of [2, 1]) {
    const name = argv.slice(0, words).join(' ');
    const command = COMMANDS[name];
    if (command) return { name, command, rest: argv.slice(words) };
  }
  throw new UsageError(`unknown command: ${JSON.stringify(argv.slice(0, 2).join(' '))}`);
}

/** Parses and checks the flags of a resolved command. Throws UsageError naming what is wrong. */
export function parseFlags(command: Command, rest: string[]): Values {
  const names = [...(command.flags.required ?? []), ...(command.flags.optional ?? [])];
  let values: Values;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: Object.fromEntries(names.map((n) => [n, { type: 'string' as const }])),
      strict: true,
      allowPositionals: false,
    }) as { values: Values });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}. Usage: svcctl ${command.usage}`);
  }
  const missing = (command.flags.required ?? []).filter((n) => !values[n]?.trim());
  if (missing.length) {
    throw new UsageError(`missing required ${missing.map((m) => `--${m}`).join(', ')}. Usage: svcctl ${command.usage}`);
  }
  return values;
}

const store = (ctx: CliContext) => new AccountsStore(ctx.db);

/** The CLI speaks the HTTP API's snake_case, whatever the domain objects use. */
export function snakeCaseKeys(value: unknown): unknown {
  if (value instanceof Verbatim) return value;
  if (Array.isArray(value)) return value.map(snakeCaseKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), snakeCaseKeys(v)]),
  );
}
