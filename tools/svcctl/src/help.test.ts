import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { USAGE } from './cli';
import { svcctl } from './test-support/run';

/**
 * Help for people: `svcctl --help`, `svcctl <command> --help` (or `help
 * <command>`) and `svcctl --version` print text and exit 0, before any
 * database is touched (the URL here goes nowhere). Wrong words keep the JSON
 * error and exit code 2.
 */
const NOWHERE = 'postgres://nobody@127.0.0.1:1/none';
const VERSION = (JSON.parse(readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as { version: string }).version;
const COMMAND_NAMES = USAGE.map((u) => u.replace(/^svcctl /, '').split(/ [-[(<]/)[0]!.trim());

describe('svcctl help', () => {
  it.each([['--help'], ['-h'], ['help']])('`svcctl %s` lists every command with what it does', async (flag) => {
    const run = await svcctl(NOWHERE, [flag]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(new RegExp(`^svcctl ${VERSION.replace(/\./g, '\\.')}: the admin CLI`));
    for (const name of COMMAND_NAMES) expect(run.stdout).toMatch(new RegExp(`\\n  ${name} +\\S`));
    expect(run.stdout).toContain('wrong arguments exit 2');
  });

  it.each([
    [['erase', '--help'], 'svcctl erase --org <id>', ['--org  (required)', '--email', '--reason']],
    [['org', 'create', '-h'], 'svcctl org create --name <name>', ['--name  (required)', '--monthly-quota']],
    [['help', 'identity-rules', 'set'], 'svcctl identity-rules set --org <id> --file <identity-rules.json>', ['--file  (required)']],
    [['replay', '--phone-country-code', '44', '--help'], 'svcctl replay', ['--phone-country-code']],
  ])('`svcctl %j` prints the command’s usage, what it does and its flags', async (args, usage, flags) => {
    const run = await svcctl(NOWHERE, args);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout.startsWith(`Usage: ${usage}`)).toBe(true);
    for (const flag of flags) expect(run.stdout).toContain(`  ${flag}`);
  });

  it('`svcctl --version` prints the product version', async () => {
    for (const flag of ['--version', '-V']) expect(await svcctl(NOWHERE, [flag])).toMatchObject({ code: 0, stdout: `svcctl ${VERSION}\n`, stderr: '' });
  });

  it.each([
    [['org', 'explode', '--help'], /unknown command: "org explode"/],
    [['help', 'nothing'], /unknown command: "nothing"/],
  ])('help of an unknown command `%j` is still a usage error: JSON, exit 2', async (args, message) => {
    const run = await svcctl(NOWHERE, args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(JSON.parse(run.stderr).error).toMatch(message);
  });
});
