export { createPostgresLogBus, type PostgresLogBus, type PostgresLogBusOptions } from './bus';
export { busMigrations } from './migrations';
