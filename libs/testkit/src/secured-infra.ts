import { randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '@svc/runtime';
import { script } from './local-infra';

/**
 * The secured shape, started for real on 127.0.0.1 beside the run's plain
 * infrastructure: certificates from infra/local/certs.sh; a Kafka broker
 * (infra/local/kafka.sh) with a SASL_SSL listener (SCRAM users stored at
 * format, PLAIN users in its JAAS) and an SSL listener that demands a client
 * certificate; PostgreSQL (infra/local/postgres.sh, Debian's binaries) that
 * accepts TLS only; and the run's schema registry reachable only through an
 * https proxy that demands a basic-auth login.
 */
export interface SecuredInfra {
  /** PEM files: `ca.crt`, `client.crt`, `client.key`, `other-ca.crt`, `server.crt`, ... */
  certs: (name: string) => string;
  kafka: {
    /** `127.0.0.1:port` of the SASL_SSL listener. */
    saslSsl: string;
    /** `127.0.0.1:port` of the SSL listener that demands a client certificate. */
    mtls: string;
    /** The broker's own plaintext listener (for tests that must look behind the secured ones). */
    plaintext: string;
    users: { scram512: Login; scram256: Login; plain: Login };
  };
  registry: { url: string; login: Login };
  postgres: { host: string; port: number; login: Login; adminUrl: string };
  stop(): Promise<void>;
}

export interface Login {
  username: string;
  password: string;
}

const secret = () => randomBytes(12).toString('hex');

export async function startSecuredInfra(plainRegistryUrl: string): Promise<SecuredInfra> {
  const root = path.join(os.tmpdir(), `svc-secured-${process.pid}-${randomBytes(3).toString('hex')}`);
  await mkdir(root, { recursive: true });
  const certDir = path.join(root, 'certs');
  await script('certs.sh', [certDir], 60_000);
  const certs = (name: string) => path.join(certDir, name);
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch((err: unknown) => console.warn('secured infra teardown:', err));
    await rm(root, { recursive: true, force: true });
  };
  try {
    const users = {
      scram512: { username: 'svc', password: secret() },
      scram256: { username: 'svc256', password: secret() },
      plain: { username: 'svcplain', password: secret() },
    };
    const [port, controller, saslPort, mtlsPort, pgPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
    const kafkaDir = path.join(root, 'kafka');
    const kafkaStart = script('kafka.sh', ['start', kafkaDir, String(port)], 600_000, {
      KAFKA_CONTROLLER_PORT: String(controller),
      KAFKA_TLS_DIR: certDir,
      KAFKA_SASL_SSL_PORT: String(saslPort),
      KAFKA_MTLS_PORT: String(mtlsPort),
      KAFKA_SCRAM_USERS: `SCRAM-SHA-512=${users.scram512.username}:${users.scram512.password} SCRAM-SHA-256=${users.scram256.username}:${users.scram256.password}`,
      KAFKA_PLAIN_USERS: `${users.plain.username}:${users.plain.password}`,
    }).then(() => stops.push(() => script('kafka.sh', ['stop', kafkaDir], 60_000).then(() => undefined)));
    const pgDir = path.join(root, 'postgres');
    const pgStart = script('postgres.sh', ['start', pgDir, String(pgPort), certDir], 120_000).then((out) => {
      stops.push(() => script('postgres.sh', ['stop', pgDir], 60_000).then(() => undefined));
      return out;
    });
    const [pgOut] = await Promise.all([pgStart, kafkaStart]);
    const adminUrl = lastValue(pgOut);
    const pgUrl = new URL(adminUrl);

    const registryLogin = { username: 'registry-user', password: secret() };
    const proxy = await startTlsAuthProxy({
      target: plainRegistryUrl,
      cert: await readFile(certs('server.crt'), 'utf8'),
      key: await readFile(certs('server.key'), 'utf8'),
      login: registryLogin,
    });
    stops.push(proxy.stop);
    return {
      certs,
      kafka: { saslSsl: `127.0.0.1:${saslPort}`, mtls: `127.0.0.1:${mtlsPort}`, plaintext: `127.0.0.1:${port}`, users },
      registry: { url: proxy.url, login: registryLogin },
      postgres: { host: pgUrl.hostname, port: Number(pgUrl.port), login: { username: decodeURIComponent(pgUrl.username), password: decodeURIComponent(pgUrl.password) }, adminUrl },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Writes `value` to a file of its own (mode 0600) and returns the path: a secret handed over as a mounted file would be. */
export async function secretFile(dir: string, name: string, value: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, name);
  await writeFile(file, `${value}\n`, { mode: 0o600 });
  return file;
}

function lastValue(out: string): string {
  const last = out.trim().split('\n').pop() ?? '';
  return last.slice(last.indexOf('=') + 1);
}

/**
 * An https reverse proxy on 127.0.0.1 that answers 401 unless the request
 * carries `login` as HTTP basic auth, and passes everything else to
 * `target` (an http URL): the registry as a managed one is reached.
 */
async function startTlsAuthProxy(o: { target: string; cert: string; key: string; login: Login }): Promise<{ url: string; stop: () => Promise<void> }> {
  const target = new URL(o.target);
  const expected = Buffer.from(`Basic ${Buffer.from(`${o.login.username}:${o.login.password}`).toString('base64')}`);
  const server: Server = createServer({ cert: o.cert, key: o.key }, (req, res) => {
    const given = Buffer.from(req.headers.authorization ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      req.resume();
      res.writeHead(401, { 'www-authenticate': 'Basic realm="registry"', 'content-type': 'application/json' });
      res.end('{"error_code":401,"message":"Unauthorized"}');
      return;
    }
    const headers = { ...req.headers, host: target.host };
    delete headers.authorization;
    const upstream = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  // The target's path (Apicurio's /apis/ccompat/v7) stays in the URL clients are given.
  const url = `https://127.0.0.1:${port}${target.pathname.replace(/\/$/, '')}`;
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
