import { readFile, stat } from 'node:fs/promises';
import { checkEngagementRules, formatProblem, type DocumentProblem } from '@svc/contracts';
import { checkIdentityRules, getEngagementRules, getIdentityRules, setEngagementRules, setIdentityRules } from '@svc/identity';
import { ValidationError, type Db } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { InvalidInputError, type Command } from '../command';

/** Largest rules file read (a full document of 200 rules is far smaller). */
const MAX_FILE_BYTES = 1_048_576;

/**
 * An organisation's rules documents, each checked whole: `set` stores
 * nothing unless every field is valid, and lists every problem when one is not.
 * - Engagement rules (libs/contracts `EngagementRules`): points per event,
 *   evaluated by the identity resolver on every newly stored event.
 * - Identity rules (libs/identity `IdentityRules`): how the organisation's
 *   identifiers are read and how far they may stitch profiles.
 */
export const ruleCommands: Record<string, Command> = {
  ...documentCommands('rules', 'rules.json', 'engagement rules', checkEngagementRules, setEngagementRules, getEngagementRules),
  ...documentCommands('identity-rules', 'identity-rules.json', 'identity rules', checkIdentityRules, setIdentityRules, getIdentityRules),
};

/** `<name> set --org --file` (checked whole, stored only when valid) and `<name> show --org`, for one kind of document. */
function documentCommands<T>(
  name: string,
  file: string,
  what: string,
  check: (doc: unknown) => { ok: true; rules: T } | { ok: false; problems: DocumentProblem[] },
  set: (db: Db, orgId: string, rules: T) => Promise<object>,
  get: (db: Db, orgId: string) => Promise<object>,
): Record<string, Command> {
  return {
    [`${name} set`]: {
      usage: `${name} set --org <id> --file <${file}>`,
      summary: `Store an organisation's ${what} from a JSON file (checked whole; nothing stored when it fails)`,
      flags: { required: ['org', 'file'] },
      async run(v, ctx) {
        const checked = check(await readJsonFile(v.file!));
        if (!checked.ok) {
          const problems = checked.problems.map(formatProblem);
          const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
          throw new InvalidInputError(`${v.file!} is not a valid ${what} document (${count}): ${problems.join('; ')}`, problems);
        }
        await new AccountsStore(ctx.db).getOrganization(v.org!);
        return set(ctx.db, v.org!, checked.rules);
      },
    },
    [`${name} show`]: {
      usage: `${name} show --org <id>`,
      summary: `Show an organisation's ${what} (the defaults when none are stored)`,
      flags: { required: ['org'] },
      async run(v, ctx) {
        await new AccountsStore(ctx.db).getOrganization(v.org!);
        return get(ctx.db, v.org!);
      },
    },
  };
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
