import { afterAll, describe, expect, it } from '@jest/globals';
import { createDb } from '../db/db';
import { createMetrics } from './create-metrics';
import { observeDbPool } from './db-pool';

describe('db_pool_connections', () => {
  // No query is made: a pool opens connections only when asked for one.
  const gateway = createDb({ url: 'postgres://127.0.0.1:1/none', poolMax: 7 });
  const resolver = createDb({ url: 'postgres://127.0.0.1:1/none', poolMax: 3 });
  afterAll(async () => Promise.all([gateway.destroy(), resolver.destroy()]));

  it('reports each pool of a registry under its name, read when scraped', async () => {
    const { registry } = createMetrics({ collectDefaultMetrics: false });
    observeDbPool(registry, gateway, 'gateway');
    observeDbPool(registry, resolver, 'resolver');
    const text = await registry.metrics();
    for (const [pool, max] of [['gateway', 7], ['resolver', 3]] as const) {
      expect(text).toContain(`db_pool_connections{pool="${pool}",state="max"} ${max}`);
      for (const state of ['used', 'free', 'pending']) expect(text).toContain(`db_pool_connections{pool="${pool}",state="${state}"} 0`);
    }
  });
});
