export * from './port';
export * from './errors';
export type { BusLogger } from './shared';
export * from './validate';
export * from './read-to-end';
export * from './postgres-log';
export * from './config';
export * from './kafka';
