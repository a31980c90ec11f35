export { connectorKeyConfigSpec, forwarderOwnConfigSpec } from './config';
export { ConnectorStore } from './connectors';
export { PLATFORMS } from './platforms/types';
export { ConversionQueue, QUEUE_STATUSES, type QueueStatus } from './queue';
export { resolveSecretKey } from './secrets';
export { buildForwarder } from './service';
