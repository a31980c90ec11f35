import { readFile, stat } from 'node:fs/promises';
import { checkEngagementRules, formatProblem, type DocumentProblem } from '@svc/contracts';
import { checkIdentityRules, getEngagementRules, getIdentityRules, setEngagementRules, setIdentityRules } from '@svc/identity';
import { AccountsStore, ValidationError } from '@svc/runtime';
import { InvalidInputError, type Command } from '../command';

/** Largest rules file read (a full document of 200 rules is far smaller). */
const MAX_FILE_BYTES = 1_048_576;

/**
 * An organisation's rules documents, each checked whole: `set` stores
 * nothing unless every field is valid, and lists every problem when one is not.
 * - Engagement rules (libs/contracts `EngagementRules`): points per event,
 *   evaluated by the identity resolver on every newly stored event.
 * - Identity rules (libs/identity `IdentityRules`): how the organisation's
 *   identifiers are read (the country of its phone numbers).
 */
export const ruleCommands: Record<string, Command> = {
  'rules set': {
    usage: 'rules set --org <id> --file <rules.json>',
    flags: { required: ['org', 'file'] },
    async run(v, ctx) {
      const check = checkEngagementRules(await readJsonFile(v.file!));
      if (!check.ok) refuse(v.file!, 'engagement rules', check.problems);
      await new AccountsStore(ctx.db).getOrganization(v.org!);
      return setEngagementRules(ctx.db, v.org!, check.rules);
    },
  },
  'rules show': {
    usage: 'rules show --org <id>',
    flags: { required: ['org'] },
    async run(v, ctx) {
      await new AccountsStore(ctx.db).getOrganization(v.org!);
      return getEngagementRules(ctx.db, v.org!);
    },
  },
  'identity-rules set': {
    usage: 'identity-rules set --org <id> --file <identity-rules.json>',
    flags: { required: ['org', 'file'] },
    async run(v, ctx) {
      const check = checkIdentityRules(await readJsonFile(v.file!));
      if (!check.ok) refuse(v.file!, 'identity rules', check.problems);
      await new AccountsStore(ctx.db).getOrganization(v.org!);
      return setIdentityRules(ctx.db, v.org!, check.rules);
    },
  },
  'identity-rules show': {
    usage: 'identity-rules show --org <id>',
    flags: { required: ['org'] },
    async run(v, ctx) {
      await new AccountsStore(ctx.db).getOrganization(v.org!);
      return getIdentityRules(ctx.db, v.org!);
    },
  },
};

function refuse(file: string, what: string, found: readonly DocumentProblem[]): never {
  const problems = found.map(formatProblem);
  const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
  throw new InvalidInputError(`${file} is not a valid ${what} document (${count}): ${problems.join('; ')}`, problems);
}

async function readJsonFile(file: string): Promise<unknown> {
  let text: string;
  try {
    if ((await stat(file)).size > MAX_FILE_BYTES) throw new ValidationError(`--file ${file} is larger than ${MAX_FILE_BYTES} bytes`);
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (err instanceof ValidationError) throw err;
    throw new ValidationError(`--file ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ValidationError(`--file ${file} is not valid JSON: ${(err as Error).message}`);
  }
}
