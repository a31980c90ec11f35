export {
  type BatchHandler,
  type Bus,
  type HandlerOutcome,
  type IncomingMessage,
  type MessageBatch,
  type OutgoingMessage,
  type ProduceResult,
} from './port';
export { BusUnavailableError, SchemaViolationError } from './errors';
export type { BusLogger } from './shared';
export { DLQ_REASON_HEADER, DLQ_SOURCE_HEADER, deadLetterMessage, deadLetterTopicFor } from './dead-letters';
export { partitionFor } from './validate';
export { readToEnd } from './read-to-end';
export { busMigrations, createPostgresLogBus, type PostgresLogBus } from './postgres-log';
export {
  busConfigSpec,
  checkBus,
  createBus,
  kafkaConnection,
  KAFKA_SASL_MECHANISMS,
  KAFKA_SECURITY_PROTOCOLS,
  prefixedTopics,
  type BusConfig,
  type KafkaConnection,
} from './config';
export { createKafkaBus } from './kafka';
