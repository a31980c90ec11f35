import type { ConnectionOptions } from 'node:tls';
import pg from 'pg';
import { env, type ConfigValues } from '../config/config';
import { checkConnection, certificateProblem, ConnectionCheckError, readPemFile, tlsFailure } from '../connections/startup-check';
import { isDatabaseUnavailable } from './unavailable';

export const DATABASE_SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
export type DatabaseSslMode = (typeof DATABASE_SSL_MODES)[number];

/**
 * How to reach PostgreSQL over TLS, beside DATABASE_URL (which every
 * composition root declares with its own description). Settings of their
 * own rather than the URL's parameters, so a URL kept in a Secret (as
 * CloudNativePG's) stays as it is while the CA and client certificate are
 * mounted files.
 */
export const databaseTlsConfigSpec = {
  DATABASE_SSL_MODE: env.optionalEnum(DATABASE_SSL_MODES, {
    description:
      'TLS to PostgreSQL: `disable`, `require` (encrypted, server not verified), `verify-ca` (signed by DATABASE_SSL_CA_FILE), `verify-full` (and names the host); unset: DATABASE_URL\'s own parameters decide',
  }),
  DATABASE_SSL_CA_FILE: env.optionalString({ description: 'PEM file of the CA that signed PostgreSQL\'s certificate (verify-ca, verify-full); unset: Node\'s bundled public CAs' }),
  DATABASE_SSL_CERT_FILE: env.optionalString({ description: 'PEM client certificate for PostgreSQL (with DATABASE_SSL_KEY_FILE)' }),
  DATABASE_SSL_KEY_FILE: env.optionalString({ description: 'PEM private key of DATABASE_SSL_CERT_FILE' }),
};
export type DatabaseTlsConfig = ConfigValues<typeof databaseTlsConfigSpec>;

/** Where and how to connect: the URL, and TLS options for pg when the settings give them. */
export interface DatabaseConnection {
  url: string;
  /** pg's `ssl`: false for none, TLS options otherwise; absent: as the URL says. */
  ssl?: ConnectionOptions | false;
}

/** The connection the settings describe, its PEM files read once; a ConnectionCheckError names a setting that is wrong. */
export function databaseConnection(url: string, tls: DatabaseTlsConfig): DatabaseConnection {
  const mode = tls.DATABASE_SSL_MODE;
  const files = tls.DATABASE_SSL_CA_FILE ?? tls.DATABASE_SSL_CERT_FILE ?? tls.DATABASE_SSL_KEY_FILE;
  if (mode === undefined) {
    if (files !== undefined) throw new ConnectionCheckError('DATABASE_SSL_MODE', 'set it (require, verify-ca or verify-full) to use the DATABASE_SSL_* files');
    return { url };
  }
  if (/[?&](sslmode|ssl|sslrootcert|sslcert|sslkey)=/.test(url)) {
    throw new ConnectionCheckError('DATABASE_SSL_MODE', 'DATABASE_URL carries TLS parameters too; set TLS in one place');
  }
  if (mode === 'disable') return { url, ssl: false };
  if ((tls.DATABASE_SSL_CERT_FILE === undefined) !== (tls.DATABASE_SSL_KEY_FILE === undefined)) {
    throw new ConnectionCheckError(tls.DATABASE_SSL_CERT_FILE ? 'DATABASE_SSL_KEY_FILE' : 'DATABASE_SSL_CERT_FILE', 'a client certificate needs both DATABASE_SSL_CERT_FILE and DATABASE_SSL_KEY_FILE');
  }
  const ssl: ConnectionOptions = { rejectUnauthorized: mode !== 'require' };
  if (tls.DATABASE_SSL_CA_FILE) ssl.ca = readPemFile('DATABASE_SSL_CA_FILE', tls.DATABASE_SSL_CA_FILE);
  if (tls.DATABASE_SSL_CERT_FILE) ssl.cert = readPemFile('DATABASE_SSL_CERT_FILE', tls.DATABASE_SSL_CERT_FILE);
  if (tls.DATABASE_SSL_KEY_FILE) ssl.key = readPemFile('DATABASE_SSL_KEY_FILE', tls.DATABASE_SSL_KEY_FILE);
  // verify-ca: the chain is checked, the name is not (libpq's meaning).
  if (mode === 'verify-ca') ssl.checkServerIdentity = () => undefined;
  return { url, ssl };
}

/**
 * A copy of `ssl` for one pg client or pool. pg makes the `key` of the
 * object it is given non-enumerable (to keep it out of logs), and knex
 * deep-copies its connection settings without what is not enumerable: a
 * shared object would lose the client key after its first use, and the
 * client certificate would silently stop being sent.
 */
export function sslForClient(ssl: ConnectionOptions | false): ConnectionOptions | false;
export function sslForClient(ssl: ConnectionOptions | false | undefined): ConnectionOptions | false | undefined;
export function sslForClient(ssl: ConnectionOptions | false | undefined): ConnectionOptions | false | undefined {
  if (!ssl) return ssl;
  return { ...ssl, ...(ssl.key === undefined ? {} : { key: ssl.key }) };
}

/** The host and port a URL names, for messages (never its user or password). */
function where(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return 'the database';
  }
}

/** SQLSTATEs of a refused login: a wrong password or user, or no pg_hba.conf line for this connection. */
const LOGIN_REFUSED = new Set(['28P01', '28000']);

/**
 * Connects once and runs `select 1`, trying again while nothing answers, for
 * at most `timeoutMs`; resolves when it works, else throws a
 * ConnectionCheckError whose one line names the setting to fix.
 */
export async function checkDatabase(connection: DatabaseConnection, timeoutMs: number): Promise<void> {
  const target = where(connection.url);
  await checkConnection({
    timeoutMs,
    async attempt() {
      const client = new pg.Client({
        connectionString: connection.url,
        ...(connection.ssl === undefined ? {} : { ssl: sslForClient(connection.ssl) }),
        connectionTimeoutMillis: Math.min(timeoutMs, 10_000),
        application_name: 'svc-startup-check',
      });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query('select 1');
      } finally {
        await client.end().catch(() => undefined);
      }
    },
    unreachable: (err) => isDatabaseUnavailable(err) || /timeout/i.test(String((err as Error)?.message)),
    explain(err) {
      const tlsProblem = tlsFailure(err);
      if (tlsProblem) return certificateProblem(tlsProblem, 'DATABASE_SSL_CA_FILE');
      const { code, message } = (err ?? {}) as { code?: string; message?: string };
      const text = String(message ?? err);
      if (/does not support SSL/i.test(text)) return new ConnectionCheckError('DATABASE_SSL_MODE', `${target} does not accept TLS connections`);
      if (code === '28000' && /no encryption/i.test(text)) {
        return new ConnectionCheckError('DATABASE_SSL_MODE', `${target} refuses connections without TLS (${text})`);
      }
      if (code && LOGIN_REFUSED.has(code)) return new ConnectionCheckError('DATABASE_URL', `${target} refused the login (${text})`);
      if (code === '3D000') return new ConnectionCheckError('DATABASE_URL', `${text} on ${target}`);
      if (isDatabaseUnavailable(err) || /timeout/i.test(text)) {
        return new ConnectionCheckError('DATABASE_URL', `${target} did not answer within ${Math.round(timeoutMs / 1000)} s (${code ?? text})`);
      }
      return new ConnectionCheckError('DATABASE_URL', `cannot connect to ${target} (${text})`);
    },
  });
}
