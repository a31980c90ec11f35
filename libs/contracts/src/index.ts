export * from './messages';
export * from './limits';
export * from './identifiers';
export * from './events';
export * from './validate-event';
export * from './topics';
export * from './schema-validator';
export * from './consent';
