import os from 'node:os';
import { ERASABLE_IDENTIFIER_TYPES, type ErasableIdentifierType } from '@svc/contracts';
import { getErasure, listErasures, publishPendingErasures, readAudit, requestErasure, unsuppress, unsuppressErasure, type ErasureTarget } from '@svc/identity';
import { NotFoundError, ValidationError } from '@svc/runtime';
import { integer, type CliContext, type Command, type Values } from '../command';

/**
 * Erasure and suppression (libs/identity's privacy port): `erase` records a
 * request exactly as `POST /v1-profiles/:id/erase` does and puts it on
 * profiles.erasure-requests, where the identity resolver carries it out;
 * `erase status` and `erase list` show where requests stand; `unsuppress`
 * lifts the suppression of one identifier (the person came back and
 * consented again); `erasure audit` prints the append-only trail, which
 * holds no erased value (ids, identifier types and hashes, counts).
 */

/** --user-id, --anonymous-id, --email, --phone: the identifier flags, one per type. */
const FLAG: Record<ErasableIdentifierType, string> = { user_id: 'user-id', anonymous_id: 'anonymous-id', email: 'email', phone: 'phone' };
const IDENTIFIER_FLAGS = ERASABLE_IDENTIFIER_TYPES.map((t) => FLAG[t]);

const operator = (v: Values): string => `svcctl:${v.actor ?? safeUser()}`;
function safeUser(): string {
  try {
    return os.userInfo().username || 'operator';
  } catch {
    return 'operator';
  }
}

/** The one identifier given (exactly one of the flags), or undefined when none is. */
function identifierOf(v: Values, allowNone: boolean): { type: ErasableIdentifierType; value: string } | undefined {
  const given = ERASABLE_IDENTIFIER_TYPES.filter((t) => v[FLAG[t]] !== undefined);
  if (given.length > 1 || (given.length === 0 && !allowNone)) {
    throw new ValidationError(`give exactly one of ${allowNone ? '--profile, ' : ''}${IDENTIFIER_FLAGS.map((f) => `--${f}`).join(', ')}`);
  }
  const type = given[0];
  return type === undefined ? undefined : { type, value: v[FLAG[type]]! };
}

export const erasureCommands: Record<string, Command> = {
  erase: {
    usage: 'erase --org <id> (--profile <id|canonical_id> | --user-id <id> | --anonymous-id <id> | --email <email> | --phone <phone>) [--reason <text>] [--actor <name>]',
    summary: 'Erase a person from every store (by profile or identifier); prints the request',
    flags: { required: ['org'], optional: ['profile', ...IDENTIFIER_FLAGS, 'reason', 'actor'] },
    async run(v, ctx) {
      const identifier = identifierOf(v, true);
      if ((identifier === undefined) === (v.profile === undefined)) {
        throw new ValidationError(`give exactly one of --profile, ${IDENTIFIER_FLAGS.map((f) => `--${f}`).join(', ')}`);
      }
      const target: ErasureTarget = identifier ? { kind: identifier.type, value: identifier.value } : { kind: 'profile', id: v.profile! };
      const result = await requestErasure(ctx.db, {
        orgId: v.org!,
        target,
        actor: operator(v),
        reason: v.reason ?? null,
        defaultPhoneCountryCode: ctx.defaultPhoneCountryCode,
        hashes: await ctx.identifierHashes(),
      });
      if (result.outcome === 'not_found') throw new NotFoundError('Profile not found');
      if (result.outcome === 'exists') throw new ValidationError(`Erasure already requested for this profile: ${result.erasureId}`);
      const { bus, topics } = await ctx.bus();
      await publishPendingErasures(ctx.db, bus, topics.erasureRequests);
      return result.erasure;
    },
  },
  'erase status': {
    usage: 'erase status --org <id> --id <erasure id>',
    summary: 'Show an erasure request and where it stands',
    flags: { required: ['org', 'id'] },
    async run(v, ctx) {
      const erasure = await getErasure(ctx.db, v.org!, v.id!);
      if (!erasure) throw new NotFoundError('Erasure request not found');
      return erasure;
    },
  },
  'erase list': {
    usage: 'erase list --org <id> [--limit <n>]',
    summary: `List an organisation's erasure requests, newest first`,
    flags: { required: ['org'], optional: ['limit'] },
    run: async (v, ctx) => ({ erasures: await listErasures(ctx.db, v.org!, v.limit === undefined ? 100 : integer('limit', v.limit, 1)) }),
  },
  unsuppress: {
    usage: 'unsuppress --org <id> (--user-id <id> | --anonymous-id <id> | --email <email> | --phone <phone> | --erasure <erasure id>) [--reason <text>] [--actor <name>]',
    summary: `Let an erased person's identifier be stored again`,
    flags: { required: ['org'], optional: [...IDENTIFIER_FLAGS, 'erasure', 'reason', 'actor'] },
    async run(v, ctx) {
      const identifier = identifierOf(v, true);
      if ((identifier === undefined) === (v.erasure === undefined)) {
        throw new ValidationError(`give exactly one of ${IDENTIFIER_FLAGS.map((f) => `--${f}`).join(', ')}, --erasure`);
      }
      if (!identifier) {
        const lifted = await unsuppressErasure(ctx.db, { orgId: v.org!, erasureId: v.erasure!, actor: operator(v), reason: v.reason ?? null });
        if (!lifted) throw new NotFoundError('Erasure request not found');
        return { erasureId: v.erasure!, lifted };
      }
      const { type, value } = identifier;
      const result = await unsuppress(ctx.db, {
        orgId: v.org!,
        type,
        value,
        actor: operator(v),
        reason: v.reason ?? null,
        defaultPhoneCountryCode: ctx.defaultPhoneCountryCode,
        hashes: await ctx.identifierHashes(),
      });
      if (!result) throw new ValidationError(`--${FLAG[type]} is not a valid ${type.replace('_', ' ')}`);
      return { identifierType: type, identifierHash: result.hash, lifted: result.lifted };
    },
  },
  'erasure audit': {
    usage: 'erasure audit --org <id> [--after <entry id>] [--limit <n>]',
    summary: 'Read the erasure audit log, oldest first',
    flags: { required: ['org'], optional: ['after', 'limit'] },
    async run(v, ctx: CliContext) {
      const entries = await readAudit(ctx.db, v.org!, {
        limit: v.limit === undefined ? 100 : integer('limit', v.limit, 1),
        ...(v.after === undefined ? {} : { afterId: String(integer('after', v.after, 0)) }),
      });
      return { entries };
    },
  },
};
