export { missingReason } from './infra-state';
export { createTestDatabase, describeWithPostgres, type TestDatabase } from './postgres';
export { describeWithKafka, kafkaEndpoints } from './kafka';
export { runNode, waitReady, type NodeRun } from './processes';
export { testLogger } from './logger';
export { batch, batchEntry, hostileString, hostileValue, mutatedEvent, nestedValue, validEvent, wideObject } from './arbitraries';
export { writeDocSection } from './benchmarks-doc';
export { rawEnvelope, TEST_CLIENT_IP } from './envelopes';
export { verifiedKey } from './keys';
