/**
 * How the global setup hands the infrastructure it found or started to the test
 * workers: environment variables, which jest's workers inherit.
 */
export const InfraEnv = {
  /** Superuser URL of a PostgreSQL server where tests may create databases. */
  postgresAdminUrl: 'SVC_TEST_POSTGRES_ADMIN_URL',
  /** Kafka bootstrap servers for tests. */
  kafkaBrokers: 'SVC_TEST_KAFKA_BROKERS',
  /** Confluent-API schema registry base URL for tests. */
  registryUrl: 'SVC_TEST_SCHEMA_REGISTRY_URL',
  /**
   * Set when the run is secured (SVC_TEST_SECURED=1): how to log in to the
   * broker and the registry, as JSON (SecuredKafka, testkit's kafka.ts).
   */
  kafkaSecurity: 'SVC_TEST_KAFKA_SECURITY',
  /** Set when a piece is unavailable (and REQUIRE_INFRA is off): why, and how to provide it. */
  missing: (piece: InfraPiece) => `SVC_TEST_MISSING_${piece.toUpperCase()}`,
} as const;

export type InfraPiece = 'postgres' | 'kafka' | 'registry' | 'chromium';

/** Why `piece` is unavailable in this run, or undefined when it is there. */
export function missingReason(piece: InfraPiece): string | undefined {
  return process.env[InfraEnv.missing(piece)];
}

/** REQUIRE_INFRA=1: what a suite needs and the run lacks fails it instead of skipping it (CI sets it). */
export const infraRequired = (): boolean => process.env.REQUIRE_INFRA === '1';
