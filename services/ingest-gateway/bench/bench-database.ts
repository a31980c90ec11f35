import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { busMigrations } from '@svc/bus';
import { privacyMigrations } from '@svc/identity';
import { createDb, runMigrations, startEmbeddedPostgres, type Db } from '@svc/runtime';
import { AccountsStore, accountsMigrations, rateLimitMigrations } from '@svc/accounts';

/** The raw log's master key the benches' gateways seal with. */
export const BENCH_RAW_LOG_MASTER_KEY = randomBytes(32).toString('hex');
/** And the identifier hash keys they name visitors' data keys with. */
export const BENCH_IDENTIFIER_HASH_KEYS = randomBytes(32).toString('hex');

/** What the gateway benches share: an embedded PostgreSQL with the gateway's schemas, and organisations' write keys made in it. */
export interface BenchDatabase {
  url: string;
  db: Db;
  /** Write keys of `count` new organisations named `<name>-<i>`. */
  writeKeys(name: string, count: number): Promise<string[]>;
  stop(): Promise<void>;
}

export async function startBenchDatabase(): Promise<BenchDatabase> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-gw-'));
  const pg = await startEmbeddedPostgres({ dataDir });
  const db = createDb({ url: pg.url, poolMax: 4, applicationName: 'bench' });
  const stop = async () => {
    await db.destroy();
    await pg.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    await runMigrations(db, [accountsMigrations, rateLimitMigrations, busMigrations, privacyMigrations]);
  } catch (err) {
    await stop();
    throw err;
  }
  const accounts = new AccountsStore(db);
  return {
    url: pg.url,
    db,
    writeKeys: async (name, count) => {
      const keys: string[] = [];
      for (let i = 0; i < count; i++) {
        const org = await accounts.createOrganization({ name: `${name}-${i}` });
        keys.push((await accounts.createApiKey({ orgId: org.id, type: 'write' })).key);
      }
      return keys;
    },
    stop,
  };
}
