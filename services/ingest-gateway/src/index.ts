export { gatewayOwnConfigSpec } from './config';
export { buildGateway } from './service';
