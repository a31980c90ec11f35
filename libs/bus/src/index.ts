export * from './port';
export * from './errors';
