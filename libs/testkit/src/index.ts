export * from './infra-state';
export * from './postgres';
export * from './kafka';
export * from './processes';
export * from './logger';
export * from './arbitraries';
export * from './benchmarks-doc';
