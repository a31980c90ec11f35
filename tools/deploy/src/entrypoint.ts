#!/usr/bin/env node
/**
 * The container image's one entrypoint: `<command> [args...]`.
 *
 *   ingest-gateway, identity-resolver, profile-api, consent-api, conversion-forwarder
 *               waits until the database has this release's schema, then runs the service
 *               in this same process (so signals reach it and its own shutdown runs)
 *   migrate     applies every pending migration and exits; concurrent runs serialise
 *               on an advisory lock
 *   topics      creates the topics (and registers their schemas) and exits; concurrent
 *               runs tolerate each other
 *   svcctl ...  the admin CLI
 *   healthcheck exits 0 when this container's service answers /readyz with 200
 *   smoke-test  posts a batch through the edge and reads its profile back (the Helm
 *               chart's `helm test`); exits 0 when every step answered as it should
 *
 * Each command's module is loaded only when it runs: a healthcheck runs every
 * few seconds and must not load the whole product (~0.8 s of CPU) to do so.
 */
const SERVICES = ['ingest-gateway', 'identity-resolver', 'profile-api', 'consent-api', 'conversion-forwarder'];
const COMMANDS = [...SERVICES, 'migrate', 'topics', 'svcctl', 'healthcheck', 'smoke-test'];
const SVCCTL = '@svc/svcctl/dist/main.js';

/** The exit status, or undefined when the command keeps running and exits by itself (a service, svcctl). */
async function main(argv: string[]): Promise<number | undefined> {
  const [command = '', ...args] = argv;
  // The one read of the environment: each command gets it and loads its own settings from it.
  const env = process.env;
  if (SERVICES.includes(command)) {
    await (await import('./start-after-schema.js')).startAfterSchema(command, `@svc/${command}/dist/main.js`, env);
    return undefined;
  }
  switch (command) {
    case 'migrate':
      return (await import('./migrate.js')).migrateCommand(env);
    case 'topics':
      return (await import('./topics.js')).topicsCommand(env);
    case 'healthcheck':
      return (await import('./healthcheck.js')).healthcheckCommand(env);
    case 'smoke-test':
      return (await import('./smoke-test.js')).smokeTestCommand(env);
    case 'svcctl':
      // svcctl reads its words from process.argv, as when it runs on its own.
      process.argv = [process.argv[0] ?? 'node', SVCCTL, ...args];
      await import(SVCCTL);
      return undefined;
    default:
      process.stderr.write(`usage: <${COMMANDS.join('|')}> [args...]${command ? ` (unknown command: ${command})` : ''}\n`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exit(code);
  },
  (err: unknown) => {
    // A wrong connection setting (runtime's ConnectionCheckError) is one line naming it; anything else keeps its stack.
    const shown = (err as Error)?.name === 'ConnectionCheckError' ? (err as Error).message : ((err as Error)?.stack ?? String(err));
    process.stderr.write(`${process.argv[2] ?? 'entrypoint'} failed: ${shown}\n`);
    process.exit(1);
  },
);
