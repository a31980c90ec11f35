import { readFileSync } from 'node:fs';
import { env } from '../config/config';

/**
 * A starting process checks each connection it needs (the database, Kafka,
 * the schema registry) before it builds anything, so a wrong setting stops
 * it with one line naming the setting instead of a retry loop or a stack
 * trace. Something that does not answer yet is tried again until the
 * timeout; a refused login or an untrusted certificate fails at once (it
 * will not fix itself).
 */
export const startupConfigSpec = {
  STARTUP_CONNECT_TIMEOUT_SECONDS: env.int({
    description:
      'How long a starting process waits for the database, Kafka and the schema registry to answer before it gives up; a refused login or an untrusted certificate stops it at once',
    default: 60,
    min: 1,
    max: 3600,
  }),
};

/** A connection that cannot be made with the settings given; `message` is one line that names `setting`. */
export class ConnectionCheckError extends Error {
  constructor(
    /** The environment variable to look at. */
    readonly setting: string,
    problem: string,
  ) {
    super(`${setting}: ${problem}`);
    this.name = 'ConnectionCheckError';
  }
}

/** Node's TLS verification codes that mean "the peer's certificate is not signed by a CA we trust". */
const UNTRUSTED_CODES: ReadonlySet<string> = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
]);

export type TlsFailure = { kind: 'untrusted' | 'wrong-name' | 'expired'; detail: string };

/** What a TLS handshake error says about the peer's certificate, following causes; undefined when it is no such error. */
export function tlsFailure(err: unknown, depth = 0): TlsFailure | undefined {
  if (typeof err !== 'object' || err === null || depth > 5) return undefined;
  const { code, message, cause, originalError, errors } = err as Record<string, unknown>;
  const detail = typeof message === 'string' ? message : String(code);
  if (typeof code === 'string') {
    if (UNTRUSTED_CODES.has(code)) return { kind: 'untrusted', detail };
    if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return { kind: 'wrong-name', detail };
    if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') return { kind: 'expired', detail };
  }
  const nested = Array.isArray(errors) ? (errors as unknown[]) : [];
  for (const e of [cause, originalError, ...nested]) {
    const found = tlsFailure(e, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** The one sentence for a certificate problem, naming the CA setting (or the host check) to look at. */
export function certificateProblem(failure: TlsFailure, caSetting: string): ConnectionCheckError {
  switch (failure.kind) {
    case 'untrusted':
      return new ConnectionCheckError(caSetting, `the server's certificate is not signed by a trusted CA (${failure.detail}); set it to the PEM file of the CA that signed it`);
    case 'wrong-name':
      return new ConnectionCheckError(caSetting, `the server's certificate does not name the host connected to (${failure.detail})`);
    case 'expired':
      return new ConnectionCheckError(caSetting, `the server's certificate is not valid now (${failure.detail})`);
  }
}

/**
 * Runs `attempt` until it succeeds, it fails with something other than
 * `unreachable`, or `timeoutMs` has passed; then the last error goes to
 * `explain`, which turns it into the line to show.
 */
export async function checkConnection(options: {
  attempt: () => Promise<void>;
  unreachable: (err: unknown) => boolean;
  explain: (err: unknown) => ConnectionCheckError;
  timeoutMs: number;
  retryMs?: number;
}): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    try {
      await options.attempt();
      return;
    } catch (err) {
      if (!options.unreachable(err) || Date.now() + (options.retryMs ?? 1_000) >= deadline) throw options.explain(err);
    }
    await new Promise((resolve) => setTimeout(resolve, options.retryMs ?? 1_000));
  }
}

/** A PEM file named by `setting`, read once at start; a ConnectionCheckError naming the setting when it cannot be read or holds no PEM. */
export function readPemFile(setting: string, file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConnectionCheckError(setting, `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`);
  }
  if (!text.includes('-----BEGIN ')) throw new ConnectionCheckError(setting, `${file} holds no PEM block`);
  return text;
}
