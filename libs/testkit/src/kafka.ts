import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { InfraEnv, missingReason } from './infra-state';
import { describeUnlessMissing } from './suites';

/** `describe` when Kafka and the schema registry are available in this run, else a loudly skipped one. */
export function describeWithKafka(name: string, fn: () => void): void {
  describeUnlessMissing(name, missingReason('kafka') ?? missingReason('registry') ?? missingReason('postgres'), fn);
}

/** How a secured run (SVC_TEST_SECURED=1) logs in to its broker and registry: files, as a deployment mounts them. */
export interface SecuredKafka {
  caFile: string;
  username: string;
  passwordFile: string;
  registryUsername: string;
  registryPasswordFile: string;
}

function securedKafka(): SecuredKafka | undefined {
  const json = process.env[InfraEnv.kafkaSecurity];
  return json ? (JSON.parse(json) as SecuredKafka) : undefined;
}

/**
 * The test broker and registry as a process under test reads them: the test
 * infrastructure runs one broker, so topics get one replica; in a secured
 * run, SASL_SSL with SCRAM-SHA-512 and the registry's https login too.
 */
export function kafkaEnv(): Record<string, string> {
  const { brokers, registryUrl } = kafkaEndpoints();
  const secured = securedKafka();
  return {
    KAFKA_BROKERS: brokers.join(','),
    SCHEMA_REGISTRY_URL: registryUrl,
    KAFKA_REPLICATION_FACTOR: '1',
    KAFKA_MIN_INSYNC_REPLICAS: '1',
    ...(secured
      ? {
          KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
          KAFKA_SSL_CA_FILE: secured.caFile,
          KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
          KAFKA_SASL_USERNAME: secured.username,
          KAFKA_SASL_PASSWORD_FILE: secured.passwordFile,
          SCHEMA_REGISTRY_CA_FILE: secured.caFile,
          SCHEMA_REGISTRY_USERNAME: secured.registryUsername,
          SCHEMA_REGISTRY_PASSWORD_FILE: secured.registryPasswordFile,
        }
      : {}),
  };
}

/**
 * The test broker and registry, as the bus's Kafka options (and kafkajs's)
 * take them: the addresses, and in a secured run the TLS and SASL settings
 * and the registry's CA and login.
 */
export function kafkaEndpoints(): {
  brokers: string[];
  registryUrl: string;
  ssl?: { ca: string };
  sasl?: { mechanism: 'scram-sha-512'; username: string; password: string };
  registryAccess?: { ca: string; username: string; password: string };
} {
  const brokers = process.env[InfraEnv.kafkaBrokers];
  const registryUrl = process.env[InfraEnv.registryUrl];
  if (!brokers || !registryUrl) throw new Error('no Kafka or schema registry for tests: the jest global setup did not provide them');
  const secured = securedKafka();
  if (!secured) return { brokers: brokers.split(','), registryUrl };
  const read = (file: string) => readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  const ca = read(secured.caFile);
  return {
    brokers: brokers.split(','),
    registryUrl,
    ssl: { ca },
    sasl: { mechanism: 'scram-sha-512', username: secured.username, password: read(secured.passwordFile) },
    registryAccess: { ca, username: secured.registryUsername, password: read(secured.registryPasswordFile) },
  };
}

/**
 * Every message of a topic as stored bytes, read with plain kafkajs (none of
 * the bus adapter's code): what anyone with access to the brokers, or a copy
 * of their disks, would see. Resolves once `count` messages arrived.
 */
export async function readRawKafkaTopic(topic: string, count: number, timeoutMs = 15_000): Promise<Array<{ key: string; value: Buffer; partition: number }>> {
  const { brokers, ssl, sasl } = kafkaEndpoints();
  const kafka = new Kafka({ brokers, ...(ssl ? { ssl } : {}), ...(sasl ? { sasl } : {}), clientId: 'raw-reader', logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `raw-${randomBytes(4).toString('hex')}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    const got: Array<{ key: string; value: Buffer; partition: number }> = [];
    await consumer.run({ eachMessage: async ({ message, partition }) => void got.push({ key: String(message.key), value: message.value ?? Buffer.alloc(0), partition }) });
    const deadline = Date.now() + timeoutMs;
    while (got.length < count) {
      if (Date.now() > deadline) throw new Error(`${topic}: ${got.length} of ${count} messages within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return got;
  } finally {
    await consumer.disconnect();
  }
}
