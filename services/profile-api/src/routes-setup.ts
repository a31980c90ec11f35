import type { Router } from 'express';
import type { Bus } from '@svc/bus';
import type { TopicSpec } from '@svc/contracts';
import { DEFAULT_PHONE_COUNTRY_CODE, findErasure, phoneDefaultOf, publishPendingErasures, requestErasure, type IdentifierHashes } from '@svc/identity';
import { RepeatingDrain, type Db, type Logger } from '@svc/runtime';
import { AccountsStore, PostgresRateLimiter, type FailedAuthThrottle } from '@svc/accounts';
import { CursorCodec } from './cursor';
import { mountProfiles } from './routes';
import { ProfileStore } from './store';

export interface ProfileApiWiring {
  /** Reads accounts, ratelimit and identity; writes only through the resolver's merge routine (and rate counters). */
  db: Db;
  logger: Logger;
  trustedProxies: readonly string[];
  failedAuth: FailedAuthThrottle;
  /**
   * HMAC key of the events cursor (CURSOR_SECRET, at least 32 characters).
   * Unset: a random key per process, so cursors do not survive a restart and
   * do not work across replicas.
   */
  cursorSecret?: string | undefined;
  /** PHONE_DEFAULT_COUNTRY_CODE: a searched phone is normalised as the resolver normalised the stored ones (where the organisation's identity rules name no region). */
  defaultPhoneCountryCode?: string;
  /** The log and profiles.erasure-requests: with them, the erasure routes are mounted. */
  erasures?: { bus: Pick<Bus, 'produce'>; topic: TopicSpec; hashes: IdentifierHashes };
}

/** Builds the Profiles API's real dependencies and mounts `/v1-profiles` on `router`; returns the erasure publisher to stop at shutdown. */
export function mountProfileApi(router: Router, w: ProfileApiWiring): RepeatingDrain | undefined {
  const cursors = new CursorCodec(w.cursorSecret);
  if (cursors.ephemeral) {
    w.logger.warn('CURSOR_SECRET is not set: events cursors are signed with a per-process random key and stop working across restarts and replicas');
  }
  // privacy.erasure_requests is its own outbox, as consent records are: published at once after a request, and retried.
  const erasures = w.erasures;
  const publisher = erasures
    ? new RepeatingDrain(() => publishPendingErasures(w.db, erasures.bus, erasures.topic), w.logger, 'erasure requests not published yet; will retry')
    : undefined;
  publisher?.start();
  const fallback = w.defaultPhoneCountryCode ?? DEFAULT_PHONE_COUNTRY_CODE;
  mountProfiles(router, {
    keys: new AccountsStore(w.db),
    rateLimiter: new PostgresRateLimiter(w.db),
    store: new ProfileStore(w.db, fallback),
    cursors,
    trustedProxies: w.trustedProxies,
    failedAuth: w.failedAuth,
    logger: w.logger,
    ...(publisher
      ? {
          erasures: {
            erasures: {
              request: (input) => requestErasure(w.db, { ...input, hashes: erasures!.hashes, defaultPhoneCountryCode: fallback }),
              get: (orgId, id) => findErasure(w.db, orgId, id),
            },
            published: () => void publisher.run(),
            phoneDefaultOf: (orgId) => phoneDefaultOf(w.db, orgId, fallback),
          },
        }
      : {}),
  });
  return publisher;
}
