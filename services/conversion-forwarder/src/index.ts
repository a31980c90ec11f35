export { forwarderOwnConfigSpec } from './config';
export { forwarderService } from './service';
