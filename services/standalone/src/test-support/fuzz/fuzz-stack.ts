import { randomBytes } from 'node:crypto';
import type { Db, Logger } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { kafkaEnv } from '@svc/testkit';
import { startTestStack } from '../test-stack';
import { rawRequest } from './raw-http';
import type { FuzzTargets } from './requests';

export type Tier = 'postgres-log' | 'kafka';

export interface FuzzStack {
  port: number;
  db: Db;
  /** Organisations the fuzzer sends as. */
  targets: FuzzTargets[];
  /** An organisation nobody sends as: its data must be exactly as it was. */
  bystander: FuzzTargets;
  stop(): Promise<void>;
}

/**
 * The whole product in this process (so a polluted Object.prototype would
 * show in the test), on a database of its own and the given bus tier, with
 * three organisations holding a few real profiles each. The proxy on
 * 127.0.0.1 is trusted, so each request's X-Forwarded-For is its client and
 * the per-IP limits do not cap the fuzzer.
 */
export async function startFuzzStack(tier: Tier, logger: Logger): Promise<FuzzStack> {
  const { t, port, stop } = await startTestStack('fuzz', logger, {
    TRUSTED_PROXIES: '127.0.0.1/32',
    ...(tier === 'kafka' ? { ...kafkaEnv(), TOPIC_PREFIX: `fuzz${randomBytes(4).toString('hex')}.` } : {}),
  });
  try {
    const accounts = new AccountsStore(t.db);
    const orgs = await Promise.all(['fuzz-a', 'fuzz-b', 'bystander'].map((name) => seedOrganisation(accounts, t.db, port, name)));
    for (const org of orgs) {
      org.foreignProfileIds = orgs.filter((o) => o !== org).flatMap((o) => o.ownProfileIds);
    }
    return { port, db: t.db, targets: orgs.slice(0, 2), bystander: orgs[2] as FuzzTargets, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** An organisation with its keys and three profiles (one identified, with an email), made through the real ingestion path. */
async function seedOrganisation(accounts: AccountsStore, db: Db, port: number, name: string): Promise<FuzzTargets & { foreignProfileIds: string[] }> {
  const org = await accounts.createOrganization({ name });
  const key = async (type: 'write' | 'read' | 'admin') => (await accounts.createApiKey({ orgId: org.id, type })).key;
  const [write, read, admin] = [await key('write'), await key('read'), await key('admin')];
  const tag = randomBytes(3).toString('hex');
  const identifiers = [`anon_${tag}_1`, `anon_${tag}_2`, `anon_${tag}_3`, `user_${tag}`, `${tag}@example.com`];
  const at = new Date().toISOString();
  const batch = [
    { type: 'identify', messageId: `${tag}-1`, anonymousId: identifiers[0], userId: identifiers[3], traits: { email: identifiers[4] }, timestamp: at },
    { type: 'track', event: 'purchase', messageId: `${tag}-2`, anonymousId: identifiers[1], timestamp: at, properties: { value: 10 } },
    { type: 'page', messageId: `${tag}-3`, anonymousId: identifiers[2], timestamp: at },
  ];
  const res = await rawRequest(port, {
    method: 'POST',
    target: Buffer.from('/functions/v1/v1-batch'),
    headers: [
      ['Authorization', `Bearer ${write}`],
      ['Content-Type', 'application/json'],
    ],
    body: Buffer.from(JSON.stringify({ batch })),
  });
  if (res.status !== 200 || (JSON.parse(res.body) as { processed?: number }).processed !== 3) throw new Error(`seeding ${name} failed: ${res.status} ${res.body}`);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const rows = await db('identity.profiles').where({ org_id: org.id }).select<Array<{ id: string; canonical_id: string }>>('id', 'canonical_id');
    if (rows.length === 3) {
      return {
        orgId: org.id,
        keys: { write, read, admin },
        ownProfileIds: rows.flatMap((r) => [r.id, r.canonical_id]),
        foreignProfileIds: [],
        ownIdentifiers: identifiers,
      };
    }
    if (Date.now() > deadline) throw new Error(`seeding ${name}: ${rows.length} of 3 profiles after 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Every row of every table that has an org_id, for one organisation, in a stable order: what "untouched" is checked against. */
export async function organisationSnapshot(db: Db, orgId: string): Promise<Record<string, unknown[]>> {
  const tables = await db('information_schema.columns')
    .where({ column_name: 'org_id' })
    .whereNotIn('table_schema', ['pg_catalog', 'information_schema'])
    .select<Array<{ table_schema: string; table_name: string }>>('table_schema', 'table_name');
  const snapshot: Record<string, unknown[]> = {};
  for (const { table_schema, table_name } of tables) {
    const { rows } = await db.raw<{ rows: Array<{ row: string }> }>(`select to_jsonb(t)::text as row from ??.?? t where t.org_id = ? order by 1`, [table_schema, table_name, orgId]);
    snapshot[`${table_schema}.${table_name}`] = rows.map((r) => r.row);
  }
  return snapshot;
}

/** Waits until every acknowledged event of `orgId` is a stored event; returns how many are stored (each at most once, by the unique key). */
export async function waitUntilStored(db: Db, orgId: string, messageIds: ReadonlySet<string>, timeoutMs: number): Promise<number> {
  const ids = [...messageIds];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // One array parameter, not one per id: a long fuzz run acknowledges more ids than a statement may bind.
    const { rows } = await db.raw<{ rows: Array<{ n: string }> }>('select count(*) as n from identity.events where org_id = ? and message_id = any(?::text[])', [orgId, ids]);
    const stored = Number(rows[0]?.n ?? 0);
    if (stored >= ids.length || Date.now() > deadline) return stored;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
