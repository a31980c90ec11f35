import { Gauge, type Registry } from 'prom-client';
import type { Db } from '../db/db';

export const DB_POOL_METRIC = 'db_pool_connections';

/** What tarn (knex's pool) tells about itself. */
interface TarnPool {
  max: number;
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

const pools = new WeakMap<Registry, Map<string, Db>>();

/**
 * `db_pool_connections{pool,state}`: a connection pool's connections in use,
 * idle, the acquires waiting for one (`pending`) and its size (`max`), read
 * when /metrics is scraped. Several pools of one process (the standalone
 * stack's own and the resolver's) share the gauge under their names.
 */
export function observeDbPool(registry: Registry, db: Db, pool: string): void {
  let named = pools.get(registry);
  if (!named) {
    const observed = new Map<string, Db>();
    named = observed;
    pools.set(registry, observed);
    new Gauge({
      name: DB_POOL_METRIC,
      help: 'Database connection pool: connections used, free, acquires pending, and the pool size (max), by pool.',
      labelNames: ['pool', 'state'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [name, knex] of observed) {
          const tarn = (knex.client as { pool?: TarnPool }).pool;
          if (!tarn) continue; // destroyed at shutdown
          this.set({ pool: name, state: 'used' }, tarn.numUsed());
          this.set({ pool: name, state: 'free' }, tarn.numFree());
          this.set({ pool: name, state: 'pending' }, tarn.numPendingAcquires());
          this.set({ pool: name, state: 'max' }, tarn.max);
        }
      },
    });
  }
  named.set(pool, db);
}
