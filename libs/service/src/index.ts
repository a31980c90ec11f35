export { serviceConfigSpec, type ServiceConfig } from './config';
export { runService, startService, type BuiltService, type RunningService, type ServiceContext, type ServiceDefinition } from './run-service';
