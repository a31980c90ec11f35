import { Topics, type TopicSpec } from '@svc/contracts';
import { ConnectionCheckError, env, readPemFile, type ConfigValues, type Db } from '@svc/runtime';
import type { Bus } from './port';
import type { Registry } from 'prom-client';
import { createKafkaBus } from './kafka';
import { checkKafka } from './kafka/check';
import type { KafkaBusOptions, KafkaSasl } from './kafka/options';
import { createPostgresLogBus } from './postgres-log';
import type { BusLogger } from './shared';

export const KAFKA_SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const;
export const KAFKA_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;

/** The bus settings every service reads; each service spreads these into its spec. */
export const busConfigSpec = {
  KAFKA_BROKERS: env.list({
    description: 'Kafka bootstrap servers (host:port,...); unset uses the Postgres-backed log in the database',
    default: [],
  }),
  KAFKA_SECURITY_PROTOCOL: env.enum(KAFKA_SECURITY_PROTOCOLS, {
    description: 'How to talk to the brokers, in Kafka\'s own words: `PLAINTEXT`, `SSL` (TLS), `SASL_SSL` (a login over TLS), `SASL_PLAINTEXT`',
    default: 'PLAINTEXT',
  }),
  KAFKA_SSL_CA_FILE: env.optionalString({ description: 'PEM file of the CA(s) that signed the brokers\' certificates; unset: Node\'s bundled public CAs' }),
  KAFKA_SSL_CERT_FILE: env.optionalString({ description: 'PEM client certificate for brokers that ask for one (mTLS), with KAFKA_SSL_KEY_FILE' }),
  KAFKA_SSL_KEY_FILE: env.optionalString({ description: 'PEM private key of KAFKA_SSL_CERT_FILE' }),
  KAFKA_SASL_MECHANISM: env.optionalEnum(KAFKA_SASL_MECHANISMS, { description: 'SASL mechanism with SASL_SSL or SASL_PLAINTEXT: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`' }),
  KAFKA_SASL_USERNAME: env.optionalString({ description: 'SASL user name' }),
  KAFKA_SASL_PASSWORD: env.optionalString({ description: 'SASL password (or KAFKA_SASL_PASSWORD_FILE)', secret: true }),
  KAFKA_REPLICATION_FACTOR: env.int({
    description: 'Replicas of each topic the services create (3 for a cluster of three or more brokers; 1 for a single broker)',
    default: 3,
    min: 1,
    max: 16,
  }),
  KAFKA_MIN_INSYNC_REPLICAS: env.int({
    description: 'min.insync.replicas of each topic the services create: replicas that must have a message before it is acknowledged (2 with three replicas; 1 for a single broker)',
    default: 2,
    min: 1,
    max: 16,
  }),
  SCHEMA_REGISTRY_URL: env.url({
    description: 'Confluent-compatible schema registry base URL; required with KAFKA_BROKERS',
    default: undefined,
  }),
  SCHEMA_REGISTRY_CA_FILE: env.optionalString({ description: 'PEM file of the CA that signed an https registry\'s certificate; unset: Node\'s bundled public CAs' }),
  SCHEMA_REGISTRY_USERNAME: env.optionalString({ description: 'Schema registry user (HTTP basic auth)' }),
  SCHEMA_REGISTRY_PASSWORD: env.optionalString({ description: 'Schema registry password (or SCHEMA_REGISTRY_PASSWORD_FILE)', secret: true }),
  TOPIC_PREFIX: env.string({ description: 'Prefix for every topic name, e.g. `prod.`', default: '' }),
  BUS_RETENTION_HOURS: env.int({ description: 'Postgres-backed log: hours a message is kept', default: 168, min: 1 }),
};

export type BusConfig = ConfigValues<typeof busConfigSpec>;

type TopicMap = { [K in keyof typeof Topics]: TopicSpec<(typeof Topics)[K]['schema']> };

/** Every topic with the deployment's prefix applied to its name. */
export function prefixedTopics(prefix: string): TopicMap {
  return Object.fromEntries(
    Object.entries(Topics).map(([k, spec]) => [k, { ...spec, name: `${prefix}${spec.name}` }]),
  ) as TopicMap;
}

/** How the Kafka adapter reaches the brokers and the registry: what KafkaBusOptions takes beside its tuning. */
export type KafkaConnection = Pick<
  KafkaBusOptions,
  'brokers' | 'registryUrl' | 'ssl' | 'sasl' | 'registryAccess' | 'replicationFactor' | 'minInsyncReplicas'
>;

/**
 * The Kafka connection the settings describe, PEM files read once, or
 * undefined on the Postgres-backed log. Settings that contradict each other
 * throw a ConnectionCheckError naming the one to change.
 */
export function kafkaConnection(config: BusConfig): KafkaConnection | undefined {
  if (config.KAFKA_BROKERS.length === 0) return undefined;
  if (!config.SCHEMA_REGISTRY_URL) {
    throw new ConnectionCheckError('SCHEMA_REGISTRY_URL', 'required with KAFKA_BROKERS: Kafka payloads are serialised through the schema registry');
  }
  const protocol = config.KAFKA_SECURITY_PROTOCOL;
  const tls = protocol === 'SSL' || protocol === 'SASL_SSL';
  const withSasl = protocol === 'SASL_SSL' || protocol === 'SASL_PLAINTEXT';
  const set = (name: keyof BusConfig) => config[name] !== undefined;
  for (const name of ['KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE'] as const) {
    if (set(name) && !tls) throw new ConnectionCheckError(name, `needs KAFKA_SECURITY_PROTOCOL=SSL or SASL_SSL (it is ${protocol})`);
  }
  if (set('KAFKA_SSL_CERT_FILE') !== set('KAFKA_SSL_KEY_FILE')) {
    throw new ConnectionCheckError(set('KAFKA_SSL_CERT_FILE') ? 'KAFKA_SSL_KEY_FILE' : 'KAFKA_SSL_CERT_FILE', 'a client certificate needs both KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE');
  }
  for (const name of ['KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'] as const) {
    if (withSasl && !set(name)) throw new ConnectionCheckError(name, `required with KAFKA_SECURITY_PROTOCOL=${protocol}`);
    if (!withSasl && set(name)) throw new ConnectionCheckError(name, `needs KAFKA_SECURITY_PROTOCOL=SASL_SSL or SASL_PLAINTEXT (it is ${protocol})`);
  }
  if (config.KAFKA_MIN_INSYNC_REPLICAS > config.KAFKA_REPLICATION_FACTOR) {
    throw new ConnectionCheckError('KAFKA_MIN_INSYNC_REPLICAS', `${config.KAFKA_MIN_INSYNC_REPLICAS} is more than KAFKA_REPLICATION_FACTOR (${config.KAFKA_REPLICATION_FACTOR}): no write could ever be acknowledged`);
  }
  if (set('SCHEMA_REGISTRY_USERNAME') !== set('SCHEMA_REGISTRY_PASSWORD')) {
    throw new ConnectionCheckError(set('SCHEMA_REGISTRY_USERNAME') ? 'SCHEMA_REGISTRY_PASSWORD' : 'SCHEMA_REGISTRY_USERNAME', 'basic auth needs both SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD');
  }
  if (config.SCHEMA_REGISTRY_USERNAME?.includes(':')) throw new ConnectionCheckError('SCHEMA_REGISTRY_USERNAME', 'must not contain ":" (HTTP basic auth)');
  if (set('SCHEMA_REGISTRY_CA_FILE') && !config.SCHEMA_REGISTRY_URL.startsWith('https:')) {
    throw new ConnectionCheckError('SCHEMA_REGISTRY_CA_FILE', 'needs an https SCHEMA_REGISTRY_URL');
  }
  const connection: KafkaConnection = {
    brokers: [...config.KAFKA_BROKERS],
    registryUrl: config.SCHEMA_REGISTRY_URL,
    replicationFactor: config.KAFKA_REPLICATION_FACTOR,
    minInsyncReplicas: config.KAFKA_MIN_INSYNC_REPLICAS,
  };
  if (tls) {
    connection.ssl = {
      ...(config.KAFKA_SSL_CA_FILE ? { ca: readPemFile('KAFKA_SSL_CA_FILE', config.KAFKA_SSL_CA_FILE) } : {}),
      ...(config.KAFKA_SSL_CERT_FILE ? { cert: readPemFile('KAFKA_SSL_CERT_FILE', config.KAFKA_SSL_CERT_FILE) } : {}),
      ...(config.KAFKA_SSL_KEY_FILE ? { key: readPemFile('KAFKA_SSL_KEY_FILE', config.KAFKA_SSL_KEY_FILE) } : {}),
    };
  }
  if (withSasl) {
    connection.sasl = {
      mechanism: config.KAFKA_SASL_MECHANISM!.toLowerCase() as KafkaSasl['mechanism'],
      username: config.KAFKA_SASL_USERNAME!,
      password: config.KAFKA_SASL_PASSWORD!,
    };
  }
  if (config.SCHEMA_REGISTRY_CA_FILE || config.SCHEMA_REGISTRY_USERNAME) {
    connection.registryAccess = {
      ...(config.SCHEMA_REGISTRY_CA_FILE ? { ca: readPemFile('SCHEMA_REGISTRY_CA_FILE', config.SCHEMA_REGISTRY_CA_FILE) } : {}),
      ...(config.SCHEMA_REGISTRY_USERNAME ? { username: config.SCHEMA_REGISTRY_USERNAME, password: config.SCHEMA_REGISTRY_PASSWORD! } : {}),
    };
  }
  return connection;
}

export interface BusDependencies {
  /** The database the Postgres-backed log lives in; its own sessions connect as this pool does. */
  db: Db;
  logger?: BusLogger;
  /** Where the bus exports consumer lag and dead-letter counts. */
  metricsRegistry?: Registry;
}

/** The configured bus: Kafka when KAFKA_BROKERS is set, else the Postgres-backed log. */
export async function createBus(config: BusConfig, deps: BusDependencies): Promise<Bus> {
  const kafka = kafkaConnection(config);
  if (kafka) {
    return createKafkaBus({
      ...kafka,
      ...(deps.logger ? { logger: deps.logger } : {}),
      ...(deps.metricsRegistry ? { metricsRegistry: deps.metricsRegistry } : {}),
    });
  }
  return createPostgresLogBus({
    db: deps.db,
    retentionHours: config.BUS_RETENTION_HOURS,
    ...(deps.logger ? { logger: deps.logger } : {}),
    ...(deps.metricsRegistry ? { metricsRegistry: deps.metricsRegistry } : {}),
  });
}

/**
 * For a starting process: on Kafka, logs in to the brokers and the registry
 * with these settings (bounded by `timeoutMs`), throwing a
 * ConnectionCheckError that names the setting at fault. The Postgres-backed
 * log needs nothing beyond the database, which is checked on its own.
 */
export async function checkBus(config: BusConfig, timeoutMs: number): Promise<void> {
  const kafka = kafkaConnection(config);
  if (kafka) await checkKafka(kafka, timeoutMs);
}
