import type { ConfigValues } from '@svc/runtime';
import type { BuiltService, ServiceConfig, ServiceContext, ServiceDefinition } from '@svc/service';
import { profileApiOwnConfigSpec } from './config';
import { mountProfileApi } from './routes-setup';

/** The Profiles API's part of a process: /v1-profiles. */
export async function buildProfileApi({ config, db, logger }: ServiceContext<ServiceConfig & ConfigValues<typeof profileApiOwnConfigSpec>>): Promise<BuiltService> {
  return {
    mount: (router) =>
      mountProfileApi(router, {
        db,
        logger,
        trustedProxies: config.TRUSTED_PROXIES,
        cursorSecret: config.CURSOR_SECRET,
        defaultPhoneCountryCode: String(config.PHONE_DEFAULT_COUNTRY_CODE),
      }),
  };
}

/** The Profiles API as its own deployment (migrations: the migrate job); may point at a read replica. */
export const profileApiService: ServiceDefinition<typeof profileApiOwnConfigSpec> = { name: 'profile-api', configSpec: profileApiOwnConfigSpec, build: buildProfileApi };
