import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from '@jest/globals';
import pg from 'pg';
import { createDb, runMigrations, type Db, type MigrationSet } from '@svc/runtime';
import { InfraEnv, missingReason } from './infra-state';
import { describeUnlessMissing } from './suites';

/** `describe` when PostgreSQL is available in this run, else a loudly skipped one. */
export function describeWithPostgres(name: string, fn: () => void): void {
  describeUnlessMissing(name, missingReason('postgres'), fn);
}

export interface TestDatabase {
  db: Db;
  url: string;
  name: string;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

function adminUrl(): string {
  const url = process.env[InfraEnv.postgresAdminUrl];
  if (!url) throw new Error('no PostgreSQL for tests: the jest global setup did not provide one');
  return url;
}

/** Refuses destructive helpers on anything that is not a throwaway test database. */
function assertTestDatabase(name: string): void {
  if (!/^svc_test_[a-z0-9_]+$/.test(name)) throw new Error(`refusing to touch non-test database ${name}`);
}

/** A fresh, migrated database of its own for one test file: suites never share state. */
export async function createTestDatabase(migrations: readonly MigrationSet[] = []): Promise<TestDatabase> {
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  const db = createDb({ url: url.toString(), poolMax: 10, applicationName: 'svc-test' });
  await runMigrations(db, migrations);
  return {
    db,
    url: url.toString(),
    name,
    async drop() {
      assertTestDatabase(name);
      await db.destroy();
      const client = new pg.Client({ connectionString: adminUrl() });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/** The suite's database as its tests read it; testDatabaseForSuite drops it. */
export type SuiteDatabase = Omit<TestDatabase, 'drop'>;

/**
 * A fresh database for the enclosing `describe`: made before its first test,
 * dropped after its last. Call it in the describe body, before hooks that use
 * it; its fields can be read from tests and hooks, not while declaring them.
 */
export function testDatabaseForSuite(migrations: readonly MigrationSet[] = []): SuiteDatabase {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(migrations);
  });
  afterAll(() => database?.drop());
  const made = (): TestDatabase => {
    if (!database) throw new Error('the suite database is made in beforeAll: read it from a test or a hook');
    return database;
  };
  return {
    get db() {
      return made().db;
    },
    get url() {
      return made().url;
    },
    get name() {
      return made().name;
    },
  };
}
