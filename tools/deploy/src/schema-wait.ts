import { createDb, pendingMigrations, type DatabaseConnection, type Logger, type MigrationSet } from '@svc/runtime';

export interface SchemaWaitOptions {
  /** How often to look again. Default 2 s. */
  pollMs?: number;
  /** How often to say again that it is still waiting. Default 30 s. */
  repeatLogMs?: number;
}

/**
 * Resolves once the database has every migration of `sets` applied. A
 * deployed service calls it before it starts: in production the `migrate`
 * job owns the schema, and a service that came up on an older schema would
 * fail on its first query instead of saying why. Meanwhile it polls, and says
 * (at start, then every `repeatLogMs`) what it waits for: the pending
 * migrations, or the database it cannot reach.
 */
export async function waitForSchema(
  connection: DatabaseConnection,
  sets: readonly MigrationSet[],
  logger: Logger,
  options: SchemaWaitOptions = {},
): Promise<void> {
  const pollMs = options.pollMs ?? 2_000;
  const repeatLogMs = options.repeatLogMs ?? 30_000;
  const db = createDb({ ...connection, poolMax: 1, applicationName: 'svc-schema-wait' });
  let loggedAt = -Infinity;
  const sayOnce = (say: () => void): void => {
    if (Date.now() - loggedAt < repeatLogMs) return;
    loggedAt = Date.now();
    say();
  };
  try {
    for (;;) {
      try {
        const pending = await pendingMigrations(db, sets);
        if (pending.length === 0) {
          if (loggedAt > -Infinity) logger.info('database schema ready');
          return;
        }
        sayOnce(() =>
          logger.warn(
            { pending },
            `database schema not ready: ${pending.length} migration(s) pending; not starting until the migrate job (\`migrate\`) has applied them`,
          ),
        );
      } catch (err) {
        sayOnce(() => logger.warn({ err }, 'database unreachable; not starting until it answers and its schema is migrated'));
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  } finally {
    await db.destroy();
  }
}
