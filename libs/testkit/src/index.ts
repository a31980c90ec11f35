export * from './infra-state';
export * from './postgres';
