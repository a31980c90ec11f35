import { parseArgs } from 'node:util';
import { UsageError, Verbatim, type Command, type Values } from './command';
import { accountCommands } from './commands/accounts';
import { connectorCommands } from './commands/connectors';
import { dlqCommands } from './commands/dlq';
import { erasureCommands } from './commands/erasure';
import { keyCommands } from './commands/keys';
import { phoneCommands } from './commands/phones';
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
  ...phoneCommands,
};

/** Usage lines of every command, for `help` and for usage errors. */
export const USAGE = Object.values(COMMANDS).map((c) => `svcctl ${c.usage}`);

/** Asks for help rather than for the work: `--help` or `-h` anywhere among the words. */
export const wantsHelp = (argv: readonly string[]): boolean => argv.includes('--help') || argv.includes('-h');

const OUTPUT = `Every command prints one JSON object on stdout. A failure prints a JSON
object with \`error\` on stderr and exits 1; wrong arguments exit 2.`;

const ENVIRONMENT = `Environment: DATABASE_URL (else the embedded database in DATA_DIR, ./.data),
KAFKA_BROKERS and SCHEMA_REGISTRY_URL for commands that use the log (else the
Postgres-backed log), RAW_LOG_MASTER_KEY, IDENTIFIER_HASH_KEYS,
CONNECTOR_SECRET_KEY; each secret may be given as <NAME>_FILE.`;

/** `svcctl --help`: every command with what it does, for people. */
export function overallHelp(version: string): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `svcctl ${version}: the admin CLI of svc

Usage: svcctl <command> [--flag <value>]...
       svcctl <command> --help
       svcctl --version

Commands:
${lines.join('\n')}

${OUTPUT}

${ENVIRONMENT}
`;
}

/** `svcctl <command> --help`: its usage, what it does, and its flags. */
export function commandHelp(name: string, command: Command): string {
  const flags = [
    ...(command.flags.required ?? []).map((f) => `  --${f}  (required)`),
    ...(command.flags.optional ?? []).map((f) => `  --${f}`),
  ];
  return `Usage: svcctl ${command.usage}

${command.summary}.
${flags.length > 0 ? `\nFlags:\n${flags.join('\n')}\n` : ''}
${OUTPUT}
`;
}

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
