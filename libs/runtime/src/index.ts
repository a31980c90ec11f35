export { AppError, NotFoundError, UnavailableError, ValidationError } from './errors';
export { env, loadConfig, loadConfigOrExit, type ConfigValues, type VarSpec } from './config/config';
export { createDb, isoTimestampSql, preparedRaw, type Db, type SqlCondition } from './db/db';
export {
  checkDatabase,
  databaseConnection,
  databaseTlsConfigSpec,
  DATABASE_SSL_MODES,
  sslForClient,
  type DatabaseConnection,
  type DatabaseSslMode,
  type DatabaseTlsConfig,
} from './db/connection';
export {
  certificateProblem,
  checkConnection,
  ConnectionCheckError,
  readPemFile,
  startupConfigSpec,
  tlsFailure,
  type TlsFailure,
} from './connections/startup-check';
export { isDatabaseUnavailable, isStatementMismatch, NETWORK_ERROR_CODES } from './db/unavailable';
export { runMigrations, sqlMigration, type Migration, type MigrationSet } from './db/migrations';
export { pendingMigrations } from './db/pending-migrations';
export { dropDatabase, ensureDatabase, freePort, sizedForMachine, startEmbeddedPostgres, type EmbeddedPostgres } from './db/embedded-postgres';
export { createLogger, type Logger } from './logging';
export { createMetrics, defineCounter, defineGauge, defineHistogram, observeDbPool, type Metrics } from './metrics';
export {
  clientIp,
  createApp,
  DEGRADED,
  HttpError,
  isHttpError,
  limitAddress,
  methodNotAllowed,
  notFound,
  parseJson,
  payloadTooLarge,
  readBounded,
  readinessFromChecks,
  readJsonBody,
  rejectOversizedContentLength,
  sendJson,
  serveHttp,
  startHttpServer,
  type RunningHttpServer,
} from './http';
export { Lifecycle, RepeatingDrain, SERVICE_NODE_FLAGS, type SignalTarget } from './lifecycle';
export { httpServiceConfigSpec } from './config/common';
export { SealedBlobError, openBytes, pooledRandomBytes, sealBytes } from './crypto/aead';
export { timeOrderedUuid } from './crypto/time-ordered-uuid';
export { SecretKeyError, generateSecretKey, parseSecretKey, secretKeyFromDataDir } from './crypto/secret-key';
export {
  NO_TRACING,
  TRACEPARENT_HEADER,
  inConsumerSpans,
  parentContext,
  startTracing,
  traceparentOf,
  tracingConfigSpec,
  type Tracing,
  type TracingConfig,
} from './tracing/tracing';
export { SpanKind, SpanStatusCode, type Span, type Tracer } from '@opentelemetry/api';
