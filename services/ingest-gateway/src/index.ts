export { gatewayOwnConfigSpec } from './config';
export { gatewayService } from './service';
