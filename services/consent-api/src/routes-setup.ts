import type { Router } from 'express';
import type { Bus } from '@svc/bus';
import type { TopicSpec } from '@svc/contracts';
import { RepeatingDrain, type Db, type Logger } from '@svc/runtime';
import { AccountsStore, PostgresRateLimiter, type FailedAuthThrottle } from '@svc/accounts';
import { publishDecisions } from './publisher';
import { mountConsent } from './routes';
import { ConsentStore } from './store';

export interface ConsentWiring {
  db: Db;
  bus: Pick<Bus, 'produce'>;
  decisionsTopic: TopicSpec;
  logger: Logger;
  trustedProxies: readonly string[];
  failedAuth: FailedAuthThrottle;
}

/** Builds the consent API's real dependencies and mounts its routes; returns the publisher to stop at shutdown. */
export function mountConsentApi(router: Router, w: ConsentWiring): RepeatingDrain {
  const store = new ConsentStore(w.db);
  const publisher = new RepeatingDrain(() => publishDecisions(store, w.bus, w.decisionsTopic), w.logger, 'consent decisions not published yet; will retry');
  publisher.start();
  mountConsent(router, {
    keys: new AccountsStore(w.db),
    rateLimiter: new PostgresRateLimiter(w.db),
    store,
    publisher,
    trustedProxies: w.trustedProxies,
    failedAuth: w.failedAuth,
  });
  return publisher;
}
