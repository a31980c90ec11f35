export { profileApiOwnConfigSpec } from './config';
export { buildProfileApi } from './service';
