import { ConnectorStore, ConversionQueue, PLATFORMS, QUEUE_STATUSES, type QueueStatus } from '@svc/conversions';
import { ValidationError } from '@svc/runtime';
import { integer, oneOf, type CliContext, type Command } from '../command';

/** Conversion connectors and their queue. Secrets go in sealed and never come back out. */
export const connectorCommands: Record<string, Command> = {
  'connector add': {
    usage: `connector add --org <id> --platform <${PLATFORMS.join('|')}> --config '<json>' [--events <name,...>]`,
    summary: 'Add a conversion connector (Google Ads or Meta) to an organisation',
    flags: { required: ['org', 'platform', 'config'], optional: ['events'] },
    async run(v, ctx) {
      const connector = await connectors(ctx, await ctx.connectorSecretKey()).add({
        orgId: v.org!,
        platform: v.platform!,
        config: parseJson('config', v.config!),
        ...(v.events === undefined ? {} : { events: v.events }),
      });
      return { connector };
    },
  },
  'connector list': {
    usage: 'connector list --org <id>',
    summary: `List an organisation's conversion connectors (secrets left out)`,
    flags: { required: ['org'] },
    run: async (v, ctx) => ({ connectors: await connectors(ctx).list(v.org!) }),
  },
  'connector disable': {
    usage: 'connector disable --id <connector id>',
    summary: 'Stop forwarding conversions through a connector',
    flags: { required: ['id'] },
    run: async (v, ctx) => ({ connector: await connectors(ctx).setState(v.id!, 'disabled') }),
  },
  'connector enable': {
    usage: 'connector enable --id <connector id>',
    summary: 'Forward conversions through a connector again',
    flags: { required: ['id'] },
    run: async (v, ctx) => ({ connector: await connectors(ctx).setState(v.id!, 'active') }),
  },
  'conversions list': {
    usage: `conversions list --org <id> [--status <${QUEUE_STATUSES.join('|')}>] [--limit <n>]`,
    summary: `List an organisation's queued, sent or dead conversions`,
    flags: { required: ['org'], optional: ['status', 'limit'] },
    run: async (v, ctx) => ({
      conversions: await new ConversionQueue(ctx.db).list(v.org!, {
        ...(v.status === undefined ? {} : { status: oneOf('status', v.status, QUEUE_STATUSES) as QueueStatus }),
        ...(v.limit === undefined ? {} : { limit: Math.min(1000, integer('limit', v.limit, 1)) }),
      }),
    }),
  },
};

const connectors = (ctx: CliContext, key?: Buffer) => new ConnectorStore(ctx.db, key);

function parseJson(flag: string, raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    // Never echo the text: it holds secrets.
    throw new ValidationError(`--${flag} must be valid JSON`);
  }
}
