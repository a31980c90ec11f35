import { describe } from '@jest/globals';
import { InfraEnv, missingReason } from './infra-state';

/** `describe` when Kafka and the schema registry are available in this run, else a loudly skipped one. */
export function describeWithKafka(name: string, fn: () => void): void {
  const missing = missingReason('kafka') ?? missingReason('registry') ?? missingReason('postgres');
  if (missing) {
    describe.skip(`${name} [skipped: ${missing}]`, fn);
  } else {
    describe(name, fn);
  }
}

/**
 * The test broker and registry as a process under test reads them: the test
 * infrastructure runs one broker, so topics get one replica.
 */
export function kafkaEnv(): Record<string, string> {
  const { brokers, registryUrl } = kafkaEndpoints();
  return { KAFKA_BROKERS: brokers.join(','), SCHEMA_REGISTRY_URL: registryUrl, KAFKA_REPLICATION_FACTOR: '1', KAFKA_MIN_INSYNC_REPLICAS: '1' };
}

/** Kafka bootstrap servers and schema registry URL for tests. */
export function kafkaEndpoints(): { brokers: string[]; registryUrl: string } {
  const brokers = process.env[InfraEnv.kafkaBrokers];
  const registryUrl = process.env[InfraEnv.registryUrl];
  if (!brokers || !registryUrl) throw new Error('no Kafka or schema registry for tests: the jest global setup did not provide them');
  return { brokers: brokers.split(','), registryUrl };
}
