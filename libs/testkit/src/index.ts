export * from './infra-state';
export * from './postgres';
export * from './kafka';
