import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';

/**
 * One writer per schema (docs/architecture.md, "Every table has one writing
 * owner"): SQL that writes to a schema (DML, or DDL on its tables) appears
 * only in the package that owns it; everyone else calls that package's store
 * functions. Tests, their support code and this kit write fixtures anywhere
 * and are not looked at. The cases below show the check able to fail.
 */
const ROOT = path.resolve(__dirname, '../../..');

/** Each schema's owner: the only source folder whose SQL may write it. */
const OWNERS: Readonly<Record<string, string>> = {
  identity: 'libs/identity/src',
  privacy: 'libs/identity/src',
  accounts: 'libs/accounts/src',
  ratelimit: 'libs/accounts/src',
  bus: 'libs/bus/src/postgres-log',
  conversions: 'libs/conversions/src',
  // The consent API is the only service that holds consent decisions: the schema is its own, not a library's.
  consent: 'services/consent-api/src',
};

/** `insert into s.t`, `update s.t`, `delete from s.t`, `truncate s.t` and DDL on a table of schema s. */
const RAW_WRITE =
  /\b(?:insert\s+into|update|delete\s+from|truncate(?:\s+table)?|(?:create|alter|drop)\s+(?:table|view|materialized\s+view|function|trigger)(?:\s+if\s+(?:not\s+)?exists)?)\s+"?([a-z_]\w*)"?\."?\w+/gi;
/** `create schema s`, `alter schema s`, `drop schema s`. */
const SCHEMA_DDL = /\b(?:create|alter|drop)\s+schema\s+(?:if\s+(?:not\s+)?exists\s+)?(?!if\b)"?([a-z_]\w*)/gi;
/** A knex builder on `s.t` (`db('s.t')`, `.into('s.t')`, `.table('s.t')`), as far as its statement goes. */
const BUILDER = /\(\s*['"`]([a-z_]\w*)\.\w+['"`]\s*\)([^;]*)/gi;
const BUILDER_WRITE = /\.(?:insert|update|del|delete|truncate|increment|decrement|upsert|merge)\(/;

/** The schemas a piece of source writes to (schema-qualified names only). */
export function schemasWritten(source: string): Set<string> {
  const out = new Set<string>();
  for (const m of source.matchAll(RAW_WRITE)) out.add(m[1]!.toLowerCase());
  for (const m of source.matchAll(SCHEMA_DDL)) out.add(m[1]!.toLowerCase());
  for (const m of source.matchAll(BUILDER)) if (BUILDER_WRITE.test(m[2]!)) out.add(m[1]!.toLowerCase());
  return out;
}

const isTestCode = (file: string): boolean => /\.(test|suite)\.ts$/.test(file) || file.includes('/test-support/') || file.startsWith('libs/testkit/');

/** The shipped TypeScript of every package (tests and fixtures left out), relative to the root. */
function shippedSources(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'dist') walk(rel);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') && !isTestCode(rel)) files.push(rel);
    }
  };
  for (const group of ['libs', 'services', 'tools']) {
    for (const pkg of readdirSync(path.join(ROOT, group))) {
      const src = `${group}/${pkg}/src`;
      if (readdirSync(path.join(ROOT, group, pkg)).includes('src')) walk(src);
    }
  }
  return files;
}

describe('schemasWritten', () => {
  const cases: Array<[string, string, string[]]> = [
    ['an insert', 'insert into identity.profiles (id) values (?)', ['identity']],
    ['an update, quoted and upper case', 'UPDATE "consent".records SET x = 1', ['consent']],
    ['a delete', `delete from conversions.queue where id = ?`, ['conversions']],
    ['a truncate', 'truncate table bus.batches', ['bus']],
    ['DDL on a table', 'create table if not exists accounts.api_keys (id uuid)', ['accounts']],
    ['DDL on the schema itself', "await trx.raw('alter schema identity rename to ??')", ['identity']],
    ['a schema named by a binding (the migration runner)', "db.raw('create schema if not exists ??', [set.schema])", []],
    ['a knex insert', "await trx('privacy.erasure_outcomes').insert({ id })", ['privacy']],
    ['a knex update further down the chain', "await db('identity.profiles').where({ id }).whereNull('x').update({ y: 1 });", ['identity']],
    ['a read', 'select * from identity.profiles p join accounts.organizations o on o.id = p.org_id', []],
    ['a knex read', "await db('identity.profiles').where({ id }).first();", []],
    ['an upsert clause is not a table', 'insert into identity.signals as s (a) values (1) on conflict (a) do update set a = excluded.a', ['identity']],
    ['a hash update', "createHash('sha256').update(key).digest('hex')", []],
  ];
  it.each(cases)('%s', (_name, source, schemas) => {
    expect([...schemasWritten(source)].sort()).toEqual(schemas);
  });
});

describe('one writer per schema', () => {
  const written = shippedSources().flatMap((file) => [...schemasWritten(readFileSync(path.join(ROOT, file), 'utf8'))].map((schema) => ({ file, schema })));

  it('finds the writers it is meant to check (the scan is not empty)', () => {
    expect(new Set(written.map((w) => w.schema))).toEqual(new Set(Object.keys(OWNERS)));
  });

  it('writes every schema from its owner only', () => {
    const outside = written.filter(({ file, schema }) => !file.startsWith(`${OWNERS[schema] ?? '(no owner)'}/`));
    expect(outside).toEqual([]);
  });
});
