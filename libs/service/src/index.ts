export { serviceConfigSpec, type ServiceConfig } from './config';
export { type BuiltService, type RunningService, type ServiceContext, type ServiceDefinition } from './definition';
export { runService, startFailure, startService } from './run-service';
export { checkConnections, startServices, type HostConfig, type PoolSpec, type ProcessOptions } from './start-services';
