/**
 * The product on the secured shape operators run: Kafka with a SASL_SSL
 * listener (SCRAM users stored at format) and an SSL listener that demands a
 * client certificate, a schema registry reachable only over https with a
 * basic-auth login, and PostgreSQL that accepts TLS only, all started for
 * real (libs/testkit's startSecuredInfra). The five services run as their
 * own processes, as deployed, with every secret handed over as a file
 * (`X_FILE`); a batch goes in through the gateway and comes back out of the
 * Profiles API, consent is recorded, and PostgreSQL shows every service's
 * sessions encrypted and signed in with the client certificate. Then each
 * wrong setting is shown to stop a start with one line naming it, within a
 * bounded time.
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { busConfigSpec, checkBus } from '@svc/bus';
import { createDb, databaseConnection, databaseTlsConfigSpec, freePort, loadConfig, runMigrations, SERVICE_NODE_FLAGS, type Db } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { describeWithKafkaAnd, kafkaEndpoints, secretFile, startSecuredInfra, type SecuredInfra } from '@svc/testkit';
import { allMigrations } from './migrations';
import { DEPLOYED_SERVICES, startServiceProcesses, type ServiceProcess } from './test-support/service-processes';

const SERVICES_DIR = path.resolve(__dirname, '../..');

describeWithKafkaAnd('secured connections: SASL_SSL Kafka, an https registry with a login, TLS-only PostgreSQL', ['openssl', 'postgresql'], () => {
  let infra: SecuredInfra;
  let secrets: string;
  let db: Db;
  let env: Record<string, string>;
  let services: ServiceProcess[] = [];
  const byName = (name: string) => services.find((s) => s.service === name)!.origin;

  beforeAll(async () => {
    infra = await startSecuredInfra(kafkaEndpoints().registryUrl);
    secrets = await mkdtemp(path.join(os.tmpdir(), 'svc-secrets-'));
    const admin = new URL(infra.postgres.adminUrl);
    const tls = {
      DATABASE_SSL_MODE: 'verify-full',
      DATABASE_SSL_CA_FILE: infra.certs('ca.crt'),
      DATABASE_SSL_CERT_FILE: infra.certs('client.crt'),
      DATABASE_SSL_KEY_FILE: infra.certs('client.key'),
    };
    const adminDb = createDb({ ...databaseConnection(admin.toString(), loadConfig(databaseTlsConfigSpec, tls)), poolMax: 1 });
    await adminDb.raw('create database svc_secured');
    await adminDb.destroy();
    const url = new URL(admin);
    url.pathname = '/svc_secured';
    db = createDb({ ...databaseConnection(url.toString(), loadConfig(databaseTlsConfigSpec, tls)), poolMax: 4 });
    await runMigrations(db, allMigrations);
    const { scram512 } = infra.kafka.users;
    env = {
      DATABASE_URL_FILE: await secretFile(secrets, 'database-url', url.toString()),
      ...tls,
      KAFKA_BROKERS: infra.kafka.saslSsl,
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SSL_CA_FILE: infra.certs('ca.crt'),
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: scram512.username,
      KAFKA_SASL_PASSWORD_FILE: await secretFile(secrets, 'kafka-password', scram512.password),
      // The secured broker is one: one replica per topic.
      KAFKA_REPLICATION_FACTOR: '1',
      KAFKA_MIN_INSYNC_REPLICAS: '1',
      SCHEMA_REGISTRY_URL: infra.registry.url,
      SCHEMA_REGISTRY_CA_FILE: infra.certs('ca.crt'),
      SCHEMA_REGISTRY_USERNAME: infra.registry.login.username,
      SCHEMA_REGISTRY_PASSWORD_FILE: await secretFile(secrets, 'registry-password', infra.registry.login.password),
      TOPIC_PREFIX: `sec${randomBytes(3).toString('hex')}.`,
      STARTUP_CONNECT_TIMEOUT_SECONDS: '20',
    };
    services = await startServiceProcesses(DEPLOYED_SERVICES.map((service) => ({ service, env })));
  }, 240_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await db?.destroy();
    await infra?.stop();
    if (secrets) await rm(secrets, { recursive: true, force: true });
  }, 120_000);

  it('a batch goes in through the gateway, is resolved through Kafka, and reads back from the Profiles API; consent is recorded', async () => {
    const accounts = new AccountsStore(db);
    const org = await accounts.createOrganization({ name: 'Secured' });
    const write = (await accounts.createApiKey({ orgId: org.id, type: 'write' })).key;
    const read = (await accounts.createApiKey({ orgId: org.id, type: 'read' })).key;
    const tag = randomUUID().slice(0, 8);
    const at = new Date().toISOString();
    const batch = [
      { type: 'identify', messageId: `${tag}-1`, anonymousId: `anon_${tag}`, userId: `user_${tag}`, traits: { email: `${tag}@example.com` }, timestamp: at },
      { type: 'track', event: 'purchase', messageId: `${tag}-2`, anonymousId: `anon_${tag}`, properties: { value: 10 }, timestamp: at },
    ];
    const posted = await fetch(`${byName('ingest-gateway')}/functions/v1/v1-batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${write}`, 'content-type': 'application/json' },
      body: JSON.stringify({ batch }),
    });
    expect(posted.status).toBe(200);
    expect(await posted.json()).toMatchObject({ success: true, processed: 2 });

    const search = `${byName('profile-api')}/functions/v1/v1-profiles/search?user_id=user_${tag}`;
    let found: { profiles: Array<{ id: string }> } = { profiles: [] };
    for (const deadline = Date.now() + 60_000; found.profiles.length === 0 && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 300));
      found = (await (await fetch(search, { headers: { authorization: `Bearer ${read}` } })).json()) as typeof found;
    }
    expect(found.profiles).toHaveLength(1);
    const events = (await (
      await fetch(`${byName('profile-api')}/functions/v1/v1-profiles/${found.profiles[0]!.id}/events`, { headers: { authorization: `Bearer ${read}` } })
    ).json()) as { events: Array<{ event_name: string }> };
    expect(events.events.map((e) => e.event_name).sort()).toEqual(['$identify', 'purchase']);

    const consent = await fetch(`${byName('consent-api')}/functions/v1/v1-consent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${write}`, 'content-type': 'application/json' },
      body: JSON.stringify({ anonymousId: `anon_${tag}`, purposes: { analytics: true } }),
    });
    expect(consent.status).toBe(200);
    for (const s of services) expect([s.service, (await fetch(`${s.origin}/readyz`)).status]).toEqual([s.service, 200]);
  });

  it('every service signed in to PostgreSQL over TLS with the client certificate', async () => {
    const sessions = (
      await db.raw<{ rows: Array<{ application_name: string; ssl: boolean; client_dn: string | null }> }>(
        `select a.application_name, s.ssl, s.client_dn from pg_stat_activity a join pg_stat_ssl s using (pid)
          where a.datname = 'svc_secured' and a.application_name = any(?)`,
        [[...DEPLOYED_SERVICES]],
      )
    ).rows;
    expect(new Set(sessions.map((s) => s.application_name))).toEqual(new Set(DEPLOYED_SERVICES));
    expect(sessions.filter((s) => !s.ssl || s.client_dn !== '/CN=svc')).toEqual([]);
  });

  const login = (extra: Record<string, string | undefined>) => {
    const merged: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...env, ...extra })) if (v !== undefined) merged[k] = v;
    return merged;
  };

  /** The working settings with another SASL user, its password as a file. */
  const saslUser = async (mechanism: string, user: { username: string; password: string }) => ({
    KAFKA_SASL_MECHANISM: mechanism,
    KAFKA_SASL_USERNAME: user.username,
    KAFKA_SASL_PASSWORD_FILE: await secretFile(secrets, `pw-${user.username}`, user.password),
  });
  it.each([
    ['SCRAM-SHA-512 over SASL_SSL', async () => ({})],
    ['SCRAM-SHA-256 over SASL_SSL', () => saslUser('SCRAM-SHA-256', infra.kafka.users.scram256)],
    ['PLAIN over SASL_SSL', () => saslUser('PLAIN', infra.kafka.users.plain)],
    [
      'a client certificate (mTLS) over SSL',
      async () => ({
        KAFKA_BROKERS: infra.kafka.mtls,
        KAFKA_SECURITY_PROTOCOL: 'SSL',
        KAFKA_SSL_CERT_FILE: infra.certs('client.crt'),
        KAFKA_SSL_KEY_FILE: infra.certs('client.key'),
        KAFKA_SASL_MECHANISM: undefined,
        KAFKA_SASL_USERNAME: undefined,
        KAFKA_SASL_PASSWORD_FILE: undefined,
      }),
    ],
  ] as const)('logs in to the brokers and the registry with %s', async (_, settings) => {
    await expect(checkBus(loadConfig(busConfigSpec, login(await settings())), 10_000)).resolves.toBeUndefined();
  });

  /** One deployment's keys: every gateway started here shares them, as replicas do. */
  const deploymentKeys = { RAW_LOG_MASTER_KEY: randomBytes(32).toString('hex'), IDENTIFIER_HASH_KEYS: randomBytes(32).toString('hex') };
  /** Starts the gateway with `extra` over the working settings; resolves with how it ended. */
  const startGateway = async (extra: Record<string, string | undefined>) => {
    const started = Date.now();
    const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, path.join(SERVICES_DIR, 'ingest-gateway/dist/main.js')], {
      // Every setting but the connection under test is right: the raw log's master key and the hash keys too.
      env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(await freePort()), LOG_LEVEL: 'error', ...deploymentKeys, ...login(extra) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number | null>((resolve) => {
      const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.once('exit', (c) => {
        clearTimeout(killer);
        resolve(c);
      });
    });
    return { code, lines: stderr.trim().split('\n'), seconds: (Date.now() - started) / 1000 };
  };

  const quick = { STARTUP_CONNECT_TIMEOUT_SECONDS: '3' };
  const closedPort = async () => `127.0.0.1:${await freePort()}`;
  it.each([
    ['a wrong SASL password', () => ({ KAFKA_SASL_PASSWORD_FILE: undefined, KAFKA_SASL_PASSWORD: 'wrong' }), /^KAFKA_SASL_PASSWORD: the brokers refused the SASL login \(SCRAM-SHA-512 as svc\)/],
    ['a mechanism the user has no credentials for', () => ({ KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256' }), /^KAFKA_SASL_PASSWORD: the brokers refused the SASL login \(SCRAM-SHA-256 as svc\)/],
    ['the brokers\' certificate signed by another CA', () => ({ KAFKA_SSL_CA_FILE: infra.certs('other-ca.crt') }), /^KAFKA_SSL_CA_FILE: the server's certificate is not signed by a trusted CA/],
    ['no CA file for a private CA', () => ({ KAFKA_SSL_CA_FILE: undefined }), /^KAFKA_SSL_CA_FILE: the server's certificate is not signed by a trusted CA/],
    [
      'plaintext to a SASL_SSL listener',
      () => ({ ...quick, KAFKA_SECURITY_PROTOCOL: 'PLAINTEXT', KAFKA_SSL_CA_FILE: undefined, KAFKA_SASL_MECHANISM: undefined, KAFKA_SASL_USERNAME: undefined, KAFKA_SASL_PASSWORD_FILE: undefined }),
      /^KAFKA_BROKERS: no broker of .* answered within 3 s .*set KAFKA_SECURITY_PROTOCOL$/,
    ],
    ['TLS to a plaintext listener', () => ({ ...quick, KAFKA_BROKERS: infra.kafka.plaintext }), /^KAFKA_SECURITY_PROTOCOL: the listener at .* does not complete a TLS handshake/],
    [
      'no client certificate where the brokers demand one',
      () => ({ KAFKA_BROKERS: infra.kafka.mtls, KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SASL_MECHANISM: undefined, KAFKA_SASL_USERNAME: undefined, KAFKA_SASL_PASSWORD_FILE: undefined }),
      /^KAFKA_SSL_CERT_FILE: the brokers demand a client certificate and none was sent/,
    ],
    ['an unreachable broker', async () => ({ ...quick, KAFKA_BROKERS: await closedPort() }), /^KAFKA_BROKERS: no broker of 127\.0\.0\.1:\d+ answered within 3 s/],
    ['a wrong registry password', () => ({ SCHEMA_REGISTRY_PASSWORD_FILE: undefined, SCHEMA_REGISTRY_PASSWORD: 'wrong' }), /^SCHEMA_REGISTRY_PASSWORD: the registry refused the login as registry-user \(HTTP 401\)/],
    [
      'no registry login',
      () => ({ SCHEMA_REGISTRY_USERNAME: undefined, SCHEMA_REGISTRY_PASSWORD_FILE: undefined }),
      /^SCHEMA_REGISTRY_PASSWORD: the registry refused the login without credentials/,
    ],
    ['no CA file for the registry', () => ({ SCHEMA_REGISTRY_CA_FILE: undefined }), /^SCHEMA_REGISTRY_CA_FILE: the server's certificate is not signed by a trusted CA/],
    ['a wrong database password', () => ({ DATABASE_URL_FILE: undefined, DATABASE_URL: withPassword(infra, 'wrong') }), /^DATABASE_URL: 127\.0\.0\.1:\d+\/svc_secured refused the login/],
    ['the database\'s certificate signed by another CA', () => ({ DATABASE_SSL_CA_FILE: infra.certs('other-ca.crt') }), /^DATABASE_SSL_CA_FILE: the server's certificate is not signed by a trusted CA/],
    [
      'no TLS to a TLS-only database',
      () => ({ DATABASE_SSL_MODE: 'disable', DATABASE_SSL_CA_FILE: undefined, DATABASE_SSL_CERT_FILE: undefined, DATABASE_SSL_KEY_FILE: undefined }),
      /^DATABASE_SSL_MODE: 127\.0\.0\.1:\d+\/svc_secured refuses connections without TLS/,
    ],
    ['an unreachable database', async () => ({ ...quick, DATABASE_URL_FILE: undefined, DATABASE_URL: `postgres://svc:x@${await closedPort()}/svc` }), /^DATABASE_URL: 127\.0\.0\.1:\d+\/svc did not answer within 3 s/],
  ] as const)('%s stops the start with one line naming the setting, in bounded time', async (_, settings, line) => {
    const run = await startGateway(await settings());
    expect(run.code).toBe(1);
    expect(run.lines).toHaveLength(1);
    expect(run.lines[0]).toMatch(/^ingest-gateway failed to start: /);
    expect(run.lines[0]!.replace(/^ingest-gateway failed to start: /, '')).toMatch(line);
    expect(run.seconds).toBeLessThan(20);
    // No secret of the working settings shows in what it printed.
    for (const secret of [infra.kafka.users.scram512.password, infra.registry.login.password, infra.postgres.login.password]) expect(run.lines[0]).not.toContain(secret);
  }, 60_000);
});

/** The secured database's URL with another password. */
function withPassword(infra: SecuredInfra, password: string): string {
  const url = new URL(infra.postgres.adminUrl);
  url.password = password;
  url.pathname = '/svc_secured';
  return url.toString();
}
