import { parseArgs } from 'node:util';
import { UsageError, Verbatim, type Command, type Values } from './command';
import { accountCommands } from './commands/accounts';
import { connectorCommands } from './commands/connectors';
import { dlqCommands } from './commands/dlq';
import { erasureCommands } from './commands/erasure';
import { keyCommands } from './commands/keys';
import { replayCommands } from './commands/replay';
import { ruleCommands } from './commands/rules';
import { warningCommands } from './commands/warnings';

export { UsageError, type CliContext } from './command';

const COMMANDS: Record<string, Command> = {
  ...accountCommands,
  ...connectorCommands,
  ...ruleCommands,
  ...replayCommands,
  ...dlqCommands,
  ...erasureCommands,
  ...keyCommands,
  ...warningCommands,
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


/** The CLI speaks the HTTP API's snake_case, whatever the domain objects use. */
export function snakeCaseKeys(value: unknown): unknown {
  if (value instanceof Verbatim) return value;
  if (Array.isArray(value)) return value.map(snakeCaseKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), snakeCaseKeys(v)]),
  );
}
