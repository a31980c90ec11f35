export * from './batch-route';
export * from './limits';
export * from './metrics';
export * from './prepare-events';
