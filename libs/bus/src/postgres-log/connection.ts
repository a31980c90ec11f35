import pg from 'pg';
import { isDatabaseUnavailable, sslForClient, type Db } from '@svc/runtime';

/**
 * Settings for the adapter's own sessions (LISTEN, and one per consumer for
 * its advisory locks), which must outlive any pooled checkout. Taken from
 * the knex instance unless a URL is given.
 */
export function sessionConfig(db: Db, url: string | undefined): pg.ClientConfig {
  if (url) return { connectionString: url };
  const conn: unknown = db.client.config.connection;
  if (typeof conn === 'string') return { connectionString: conn };
  // knex's PgConnectionConfig is pg's ClientConfig (knex hands it to pg.Client as is); TLS options copied with their key.
  if (conn && typeof conn === 'object') {
    const config = conn as pg.ClientConfig;
    return typeof config.ssl === 'object' ? { ...config, ssl: sslForClient(config.ssl) } : { ...config };
  }
  throw new Error('createPostgresLogBus: the knex connection is a provider function; pass `url` as well');
}

/**
 * Opens a session of our own. The `error` listener is attached before
 * connecting: an idle pg.Client whose server goes away emits `error`, and an
 * unhandled one would take the process down. The owner notices a dead
 * session through its next query failing.
 */
export async function openSession(
  config: pg.ClientConfig,
  applicationName: string,
  onError: (err: Error) => void,
): Promise<pg.Client> {
  const client = new pg.Client({
    ...config,
    application_name: applicationName.slice(0, 63),
    connectionTimeoutMillis: config.connectionTimeoutMillis ?? 5_000,
    keepAlive: true,
  });
  client.on('error', onError);
  try {
    await client.connect();
  } catch (err) {
    await closeQuietly(client);
    throw err;
  }
  return client;
}

export async function closeQuietly(client: pg.Client | undefined): Promise<void> {
  await client?.end().catch(() => undefined);
}

/** Whether an error means the database cannot be reached (worth retrying later), not that the request is bad: runtime's one answer. */
export const isUnavailable = (err: unknown): boolean => isDatabaseUnavailable(err);

/** An awaitable wake-up: `wait` ends at the timeout or at `wake()`, and a wake that came early is not lost. */
export class Signal {
  private pending = false;
  private release: (() => void) | undefined;

  wake(): void {
    this.pending = true;
    this.release?.();
  }

  /** Forgets a wake that came before: the next wait waits. */
  clear(): void {
    this.pending = false;
  }

  async wait(ms: number): Promise<void> {
    if (!this.pending) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => this.release?.(), Math.max(0, ms));
        this.release = () => {
          clearTimeout(timer);
          this.release = undefined;
          resolve();
        };
      });
    }
    this.pending = false;
  }
}
