import { GenericContainer, Wait, getContainerRuntimeClient, type StartedTestContainer } from 'testcontainers';
import { freePort } from '@svc/runtime';
import type { LocalProcess } from './local-infra';

/**
 * The same three pieces as containers, for a machine with a container runtime
 * (a developer laptop with Docker). The global setup prefers these when a
 * runtime answers and falls back to local processes otherwise.
 */
export async function containerRuntimeAvailable(): Promise<boolean> {
  try {
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

const stopper = (c: StartedTestContainer) => async () => {
  await c.stop();
};

/** PostgreSQL 16; address is a superuser URL of the maintenance database. */
export async function startPostgresContainer(): Promise<LocalProcess> {
  const c = await new GenericContainer('postgres:16-alpine')
    .withEnvironment({ POSTGRES_PASSWORD: 'test' })
    .withCommand(['postgres', '-c', 'fsync=off', '-c', 'max_connections=400'])
    .withExposedPorts(5432)
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .start();
  return { address: `postgres://postgres:test@${c.getHost()}:${c.getMappedPort(5432)}/postgres`, stop: stopper(c) };
}

/** Apache Kafka in KRaft mode; the advertised listener is the host port, so clients outside reach it. */
export async function startKafkaContainer(): Promise<LocalProcess> {
  const hostPort = await freePort();
  const c = await new GenericContainer('apache/kafka:3.9.0')
    .withExposedPorts({ container: 9092, host: hostPort })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${hostPort}`,
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .start();
  return { address: `127.0.0.1:${hostPort}`, stop: stopper(c) };
}

/** Apicurio Registry 3.0 with its Confluent-compatible API; address is that API's base URL. */
export async function startRegistryContainer(): Promise<LocalProcess> {
  const c = await new GenericContainer('apicurio/apicurio-registry:3.0.9')
    .withExposedPorts(8080)
    .withEnvironment({ APICURIO_RULES_GLOBAL_COMPATIBILITY: 'BACKWARD' })
    .withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/subjects', 8080).forStatusCode(200))
    .start();
  return { address: `http://${c.getHost()}:${c.getMappedPort(8080)}/apis/ccompat/v7`, stop: stopper(c) };
}
