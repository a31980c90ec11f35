import { ConnectionCheckError, certificateProblem, checkConnection, tlsFailure } from '@svc/runtime';
import { createKafka, Sockets } from './client';
import type { KafkaBusOptions } from './options';
import { MemoizingRegistryClient } from './registry';
import { isUnavailable } from './unavailable';
import { silentLogger } from '../shared';

type Checked = Pick<KafkaBusOptions, 'brokers' | 'registryUrl' | 'ssl' | 'sasl' | 'registryAccess'>;

/**
 * Logs in to the brokers (cluster metadata) and to the schema registry
 * (its subject list) with the settings a process will run with, trying
 * again while nothing answers, for at most `timeoutMs`. A refused login or
 * an untrusted certificate fails at once: a ConnectionCheckError whose one
 * line names the setting to fix.
 */
export async function checkKafka(o: Checked, timeoutMs: number): Promise<void> {
  await Promise.all([checkBrokers(o, timeoutMs), checkRegistry(o, timeoutMs)]);
}

async function checkBrokers(o: Checked, timeoutMs: number): Promise<void> {
  const sasl = o.sasl ? `${o.sasl.mechanism.toUpperCase()} as ${o.sasl.username}` : '';
  await checkConnection({
    timeoutMs,
    async attempt() {
      const sockets = new Sockets();
      const admin = createKafka({ ...o, clientId: 'svc-startup-check' }, sockets, silentLogger).admin({ retry: { retries: 0 } });
      try {
        await admin.connect();
        await admin.describeCluster();
      } finally {
        await admin.disconnect().catch(() => undefined);
        sockets.kill();
      }
    },
    unreachable: (err) => !tlsFailure(err) && !isSaslError(err) && !refusedClientCertificate(err) && isUnavailable(err),
    explain(err) {
      const tls = tlsFailure(err);
      if (tls) return certificateProblem(tls, 'KAFKA_SSL_CA_FILE');
      const text = describe(err);
      if (isSaslError(err)) {
        if (/not supported/i.test(text)) return new ConnectionCheckError('KAFKA_SASL_MECHANISM', `the brokers do not offer ${o.sasl?.mechanism.toUpperCase() ?? 'SASL'} on this listener (${text})`);
        return new ConnectionCheckError('KAFKA_SASL_PASSWORD', `the brokers refused the SASL login (${sasl}): ${text}`);
      }
      if (refusedClientCertificate(err)) {
        const sent = o.ssl?.cert ? 'the one sent is not signed by a CA they trust' : 'none was sent';
        return new ConnectionCheckError('KAFKA_SSL_CERT_FILE', `the brokers demand a client certificate and ${sent} (${text})`);
      }
      if (o.ssl && /before secure TLS connection was established|wrong version number|packet length too long/i.test(text)) {
        return new ConnectionCheckError('KAFKA_SECURITY_PROTOCOL', `the listener at ${o.brokers.join(',')} does not complete a TLS handshake: is it plaintext? (${text})`);
      }
      if (isUnavailable(err)) {
        const hint = o.ssl ? '' : '; if the listener speaks TLS or SASL, set KAFKA_SECURITY_PROTOCOL';
        return new ConnectionCheckError('KAFKA_BROKERS', `no broker of ${o.brokers.join(',')} answered within ${Math.round(timeoutMs / 1000)} s (${text})${hint}`);
      }
      return new ConnectionCheckError('KAFKA_BROKERS', `cannot use ${o.brokers.join(',')} (${text})`);
    },
  });
}

async function checkRegistry(o: Checked, timeoutMs: number): Promise<void> {
  await checkConnection({
    timeoutMs,
    async attempt() {
      const registry = MemoizingRegistryClient.connect(o.registryUrl, Math.min(timeoutMs, 10_000), o.registryAccess);
      try {
        await registry.getAllSubjects();
      } finally {
        await registry.close();
      }
    },
    unreachable: (err) => !tlsFailure(err) && isUnavailable(err),
    explain(err) {
      const tls = tlsFailure(err);
      if (tls) return certificateProblem(tls, 'SCHEMA_REGISTRY_CA_FILE');
      const status = (err as { status?: unknown }).status;
      if (status === 401 || status === 403) {
        const who = o.registryAccess?.username ? `as ${o.registryAccess.username}` : 'without credentials (set SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD)';
        return new ConnectionCheckError('SCHEMA_REGISTRY_PASSWORD', `the registry refused the login ${who} (HTTP ${status})`);
      }
      if (typeof status === 'number' && status < 500) {
        return new ConnectionCheckError('SCHEMA_REGISTRY_URL', `${o.registryUrl}/subjects answered HTTP ${status}: not a Confluent-compatible registry API at this URL`);
      }
      return new ConnectionCheckError('SCHEMA_REGISTRY_URL', `${o.registryUrl} did not answer within ${Math.round(timeoutMs / 1000)} s (${describe(err)})`);
    },
  });
}

/** The TLS alert a broker sends when it demands a client certificate and gets none, or one it does not trust. */
function refusedClientCertificate(err: unknown): boolean {
  return /alert bad certificate|alert certificate required|alert unknown ca|SSL alert number (42|48|116)/i.test(describe(err));
}

function isSaslError(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 4) return false;
  const { name, type, originalError, cause } = err as Record<string, unknown>;
  if (name === 'KafkaJSSASLAuthenticationError' || type === 'SASL_AUTHENTICATION_FAILED' || type === 'UNSUPPORTED_SASL_MECHANISM' || type === 'ILLEGAL_SASL_STATE') return true;
  return isSaslError(originalError, depth + 1) || isSaslError(cause, depth + 1);
}

/** The innermost message worth showing: kafkajs wraps socket errors in its own. */
function describe(err: unknown): string {
  const seen: string[] = [];
  let e: unknown = err;
  for (let i = 0; i < 4 && typeof e === 'object' && e !== null; i++) {
    const { message, code } = e as { message?: unknown; code?: unknown };
    if (typeof message === 'string' && message && !seen.includes(message)) seen.push(typeof code === 'string' && !message.includes(code) ? `${message} [${code}]` : message);
    e = (e as { originalError?: unknown; cause?: unknown }).originalError ?? (e as { cause?: unknown }).cause;
  }
  return (seen.join(': ') || String(err)).replace(/\s+/g, ' ').trim();
}
