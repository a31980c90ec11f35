import { env } from '@svc/runtime';
import { DEFAULT_PHONE_COUNTRY_CODE } from './signals';

/**
 * Settings of the identity schema's data that every component reading or
 * writing it must agree on; a composition root spreads them in once. The
 * resolver normalises phone traits with it, and the Profiles API a phone it
 * is asked to search for: with two codes, an exact search would miss.
 */
export const identityConfigSpec = {
  PHONE_DEFAULT_COUNTRY_CODE: env.int({
    description: 'Country calling code assumed for a phone written without one, in traits and in Profiles API searches (91 = India)',
    default: Number(DEFAULT_PHONE_COUNTRY_CODE),
    min: 1,
    max: 999,
  }),
};
