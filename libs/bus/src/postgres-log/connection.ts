import pg from 'pg';
import type { Db } from '@svc/runtime';


/**
 * Settings for the adapter's own sessions (LISTEN, and one per consumer for
 * its advisory locks), which must outlive any pooled checkout. Taken from
 * the knex instance unless a URL is given.
 */
export function sessionConfig(db: Db, url: string | undefined): pg.ClientConfig {
  if (url) return { connectionString: url };
  const conn: unknown = db.client.config.connection;
  if (typeof conn === 'string') return { connectionString: conn };
  // knex's PgConnectionConfig is pg's ClientConfig (knex hands it to pg.Client as is).
  if (conn && typeof conn === 'object') return { ...(conn as pg.ClientConfig) };
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

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
// SQLSTATEs meaning "the server cannot serve you now": shutdown, starting up, too many connections, ...
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014' /* statement timeout */]);
const UNAVAILABLE_MESSAGES = /Connection terminated|connection error|not queryable|Timeout acquiring a connection/i;

/** Whether an error means the database cannot be reached (worth retrying later), not that the request is bad. */
export function isUnavailable(err: unknown, depth = 0): boolean {
  // Duck-typed, not `instanceof Error`: errors from node's net module may come from another realm (e.g. under jest).
  if (typeof err !== 'object' || err === null || depth > 4) return false;
  const { code, name, message, cause, errors } = err as {
    code?: unknown;
    name?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08'))) {
    return true;
  }
  if (name === 'KnexTimeoutError' || (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message))) return true;
  // Node wraps failed attempts to connect to several addresses in an AggregateError.
  const nested = Array.isArray(errors) ? (errors as unknown[]) : [];
  return [cause, ...nested].some((e) => isUnavailable(e, depth + 1));
}

/** An awaitable wake-up: `wait` ends at the timeout or at `wake()`, and a wake that came early is not lost. */
export class Signal {
  private pending = false;
  private release: (() => void) | undefined;

  wake(): void {
    this.pending = true;
    this.release?.();
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
