import { Topics, type TopicSpec } from '@svc/contracts';
import { env, type Db } from '@svc/runtime';
import type { Bus } from './port';
import type { Registry } from 'prom-client';
import { createKafkaBus } from './kafka';
import { createPostgresLogBus } from './postgres-log';
import type { BusLogger } from './shared';

/** The bus settings every service reads; each service spreads these into its spec. */
export const busConfigSpec = {
  KAFKA_BROKERS: env.list({
    description: 'Kafka bootstrap servers (host:port,...); unset uses the Postgres-backed log in the database',
    default: [],
  }),
  SCHEMA_REGISTRY_URL: env.url({
    description: 'Confluent-compatible schema registry base URL; required with KAFKA_BROKERS',
    default: undefined,
  }),
  TOPIC_PREFIX: env.string({ description: 'Prefix for every topic name, e.g. `prod.`', default: '' }),
  BUS_RETENTION_HOURS: env.int({ description: 'Postgres-backed log: hours a message is kept', default: 168, min: 1 }),
};

export interface BusConfig {
  KAFKA_BROKERS: readonly string[];
  SCHEMA_REGISTRY_URL: string | undefined;
  TOPIC_PREFIX: string;
  BUS_RETENTION_HOURS: number;
}

type TopicMap = { [K in keyof typeof Topics]: TopicSpec<(typeof Topics)[K]['schema']> };

/** Every topic with the deployment's prefix applied to its name. */
export function prefixedTopics(prefix: string): TopicMap {
  return Object.fromEntries(
    Object.entries(Topics).map(([k, spec]) => [k, { ...spec, name: `${prefix}${spec.name}` }]),
  ) as TopicMap;
}

export interface BusDependencies {
  /** The database the Postgres-backed log lives in. */
  db: Db;
  /** Its URL, for the log's own listening and consumer sessions. */
  databaseUrl: string;
  logger?: BusLogger;
  /** Where the bus exports consumer lag and dead-letter counts. */
  metricsRegistry?: Registry;
}

/** The configured bus: Kafka when KAFKA_BROKERS is set, else the Postgres-backed log. */
export async function createBus(config: BusConfig, deps: BusDependencies): Promise<Bus> {
  if (config.KAFKA_BROKERS.length > 0) {
    if (!config.SCHEMA_REGISTRY_URL) {
      throw new Error('SCHEMA_REGISTRY_URL is required with KAFKA_BROKERS: Kafka payloads are serialised through the schema registry');
    }
    return createKafkaBus({
      brokers: [...config.KAFKA_BROKERS],
      registryUrl: config.SCHEMA_REGISTRY_URL,
      ...(deps.logger ? { logger: deps.logger } : {}),
      ...(deps.metricsRegistry ? { metricsRegistry: deps.metricsRegistry } : {}),
    });
  }
  return createPostgresLogBus({
    db: deps.db,
    url: deps.databaseUrl,
    retentionHours: config.BUS_RETENTION_HOURS,
    ...(deps.logger ? { logger: deps.logger } : {}),
    ...(deps.metricsRegistry ? { metricsRegistry: deps.metricsRegistry } : {}),
  });
}
