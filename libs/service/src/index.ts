export { serviceConfigSpec, type ServiceConfig } from './config';
export { PRODUCT_VERSION, checkConnections, runService, startFailure, startService, type BuiltService, type RunningService, type ServiceContext, type ServiceDefinition } from './run-service';
