export { profileApiOwnConfigSpec } from './config';
export { profileApiService } from './service';
