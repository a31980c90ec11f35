export * from './batch-route';
export * from './config';
export * from './limits';
export * from './metrics';
export * from './prepare-events';
export * from './routes';
export * from './segment/routes';
