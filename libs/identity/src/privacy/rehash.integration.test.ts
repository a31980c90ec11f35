import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { identifierHashes } from './config';
import { IdentifierHashes, baseHashSql } from './hash';
import { privacyMigrations } from './migrations';
import { checkIdentifierHashKeys, identifierHashesLeft, rehashStoredIdentifiers } from './rehash';
import { MasterKeyRing, SubjectKeys } from './subject-keys';
import { suppressedIdentifiers } from './suppression';

const plain = (org: string, type: string, value: string) => createHash('sha256').update(`${org}\u0000${type}\u0000${value}`).digest('hex');

/**
 * Keyed identifier hashes on a real database: rows written before keys
 * existed (plain SHA-256) and rows under an earlier key are found meanwhile
 * and brought under the newest key without their values, the audit log
 * included (its trigger lets exactly that through); the database computes
 * the same hashes as Node; and a copy of the database holds no plain
 * SHA-256 of anything erased.
 */
describeWithPostgres('keyed identifier hashes in the privacy schema', () => {
  let t: TestDatabase;
  const org = randomUUID();
  const [k1, k2] = [randomBytes(32), randomBytes(32)];
  const one = new IdentifierHashes([k1]);
  const two = new IdentifierHashes([k1, k2]);
  const erased = [
    ['email', 'ann@example.com'],
    ['phone', '+442079460958'],
    ['user_id', 'u-ann'],
    ['anonymous_id', 'anon-ann'],
  ] as const;
  const erasureId = randomUUID();

  beforeAll(async () => {
    t = await createTestDatabase([privacyMigrations]);
    // What a deployment from before keyed hashes holds: a request, its suppressions, its audit rows, a raw-log key, all plain SHA-256.
    await t.db('privacy.erasure_requests').insert({
      id: erasureId,
      org_id: org,
      target_kind: 'email',
      target_hash: plain(org, 'email', 'ann@example.com'),
      profile_id: randomUUID(),
      canonical_id: 'c-ann',
      scope: ['profile'],
      actor: 'svcctl:test',
    });
    await t.db('privacy.suppressions').insert(erased.map(([type, value]) => ({ org_id: org, identifier_type: type, identifier_hash: plain(org, type, value), erasure_id: erasureId })));
    await t.db('privacy.audit_log').insert([
      { org_id: org, actor: 'identity-resolver', action: 'erasure_done', erasure_id: erasureId, details: JSON.stringify({ counts: { profiles: 1 } }) },
      {
        org_id: org,
        actor: 'identity-resolver',
        action: 'suppressed',
        erasure_id: erasureId,
        details: JSON.stringify({ identifiers: erased.map(([type, value]) => ({ identifier_type: type, identifier_hash: plain(org, type, value) })) }),
      },
      { org_id: org, actor: 'svcctl:test', action: 'unsuppressed', erasure_id: erasureId, details: JSON.stringify({ identifier_type: 'user_id', identifier_hash: plain(org, 'user_id', 'u-ann'), reason: 'came back' }) },
    ]);
    await t.db('privacy.subject_keys').insert({ org_id: org, subject_hash: plain(org, 'anonymous_id', 'anon-kept'), key_id: randomUUID(), wrapped_key: randomBytes(60), master_key_id: 'm1' });
  });
  afterAll(() => t.drop());

  const suppressed = async (hashes: IdentifierHashes) =>
    suppressedIdentifiers(
      t.db,
      erased.flatMap(([type, value]) => hashes.lookups(org, type, value).map((hash) => ({ orgId: org, type, hash }))),
    );

  it('finds unkeyed rows before they are migrated, then brings every table under the key without the values', async () => {
    expect((await suppressed(one)).size).toBe(erased.length);
    expect(await identifierHashesLeft(t.db, one)).toEqual({ suppressions: 4, erasure_requests: 1, subject_keys: 1, audit_log: 2 });

    expect(await rehashStoredIdentifiers(t.db, one)).toEqual({ suppressions: 4, erasure_requests: 1, subject_keys: 1, audit_log: 2, subject_key_conflicts: 0 });
    expect(await identifierHashesLeft(t.db, one)).toEqual({ suppressions: 0, erasure_requests: 0, subject_keys: 0, audit_log: 0 });
    expect(await rehashStoredIdentifiers(t.db, one)).toEqual({ suppressions: 0, erasure_requests: 0, subject_keys: 0, audit_log: 0, subject_key_conflicts: 0 });

    expect((await t.db('privacy.suppressions').where({ org_id: org }).pluck('identifier_hash')).sort()).toEqual(erased.map(([type, value]) => one.of(org, type, value)).sort());
    expect(await t.db('privacy.erasure_requests').where({ id: erasureId }).first('target_hash')).toEqual({ target_hash: one.of(org, 'email', 'ann@example.com') });
    expect(await t.db('privacy.subject_keys').where({ org_id: org }).pluck('subject_hash')).toEqual([one.of(org, 'anonymous_id', 'anon-kept')]);
    const audit = (await t.db('privacy.audit_log').where({ org_id: org }).orderBy('id').select('action', 'details')) as Array<{ action: string; details: unknown }>;
    expect(audit).toEqual([
      { action: 'erasure_done', details: { counts: { profiles: 1 } } },
      { action: 'suppressed', details: { identifiers: erased.map(([type, value]) => ({ identifier_type: type, identifier_hash: one.of(org, type, value) })) } },
      { action: 'unsuppressed', details: { identifier_type: 'user_id', identifier_hash: one.of(org, 'user_id', 'u-ann'), reason: 'came back' } },
    ]);
    expect((await suppressed(one)).size).toBe(erased.length);
  });

  it('keeps the audit log append-only for everything else', async () => {
    const id = (await t.db('privacy.audit_log').where({ org_id: org, action: 'unsuppressed' }).first('id')) as { id: string };
    await expect(t.db('privacy.audit_log').where(id).update({ details: JSON.stringify({ identifier_type: 'user_id', identifier_hash: 'k1.' + 'a'.repeat(64), reason: 'came back' }) })).rejects.toThrow(
      'the privacy audit log is append-only',
    );
    await expect(t.db('privacy.audit_log').where(id).delete()).rejects.toThrow('the privacy audit log is append-only');
    // Declared as a rewrap, but changing more than the hashes: refused too.
    await expect(
      t.db.transaction(async (trx) => {
        await trx.raw(`select set_config('svc.rehash_audit', 'on', true)`);
        await trx('privacy.audit_log').where(id).update({ details: JSON.stringify({ identifier_type: 'user_id', identifier_hash: 'k1.' + 'a'.repeat(64), reason: 'rewritten' }) });
      }),
    ).rejects.toThrow('the privacy audit log is append-only');
    await expect(
      t.db.transaction(async (trx) => {
        await trx.raw(`select set_config('svc.rehash_audit', 'on', true)`);
        await trx('privacy.audit_log').where(id).update({ actor: 'someone else' });
      }),
    ).rejects.toThrow('the privacy audit log is append-only');
  });

  it('rotates: a key appended is used at once, rows under the previous key are found and reused meanwhile, then brought under it', async () => {
    // The gateway of the new key meets a visitor whose key row is still under the old one: the same key, not a second.
    const ring = new MasterKeyRing(randomBytes(32));
    const before = (await new SubjectKeys(t.db, ring, one).forSubjects(org, ['anon-rotating'])).get('anon-rotating')!;
    const during = (await new SubjectKeys(t.db, ring, two).forSubjects(org, ['anon-rotating'])).get('anon-rotating')!;
    expect(during.id).toBe(before.id);
    expect((await suppressed(two)).size).toBe(erased.length);

    const counts = await rehashStoredIdentifiers(t.db, two);
    expect(counts).toEqual({ suppressions: 4, erasure_requests: 1, subject_keys: 2, audit_log: 2, subject_key_conflicts: 0 });
    expect(await identifierHashesLeft(t.db, two)).toEqual({ suppressions: 0, erasure_requests: 0, subject_keys: 0, audit_log: 0 });
    expect((await t.db('privacy.suppressions').where({ org_id: org }).pluck('identifier_hash')).sort()).toEqual(erased.map(([type, value]) => two.of(org, type, value)).sort());
    expect((await new SubjectKeys(t.db, ring, two).forSubjects(org, ['anon-rotating'])).get('anon-rotating')!.id).toBe(before.id);
    // A process still on the old key alone no longer finds them: every process gets the new key before the rows move.
    expect((await suppressed(one)).size).toBe(0);
  });

  it('merges two forms of one suppression into one row, in force if either was', async () => {
    const lifted = new Date('2026-01-01T00:00:00Z');
    await t.db('privacy.suppressions').insert([
      { org_id: org, identifier_type: 'email', identifier_hash: plain(org, 'email', 'twice@example.com'), lifted_at: lifted },
      { org_id: org, identifier_type: 'email', identifier_hash: one.of(org, 'email', 'twice@example.com'), lifted_at: null },
    ]);
    expect((await rehashStoredIdentifiers(t.db, two)).suppressions).toBe(2);
    expect(await t.db('privacy.suppressions').where({ org_id: org, identifier_type: 'email' }).whereIn('identifier_hash', two.lookups(org, 'email', 'twice@example.com')).select('identifier_hash', 'lifted_at')).toEqual([
      { identifier_hash: two.of(org, 'email', 'twice@example.com'), lifted_at: null },
    ]);
  });

  it('computes in the database the same hashes as Node, and matches a tombstone\'s value in either form, and no other', async () => {
    const stranger = new IdentifierHashes([randomBytes(32)]);
    for (const value of ['', 'ann@example.com', 'ünïcødé ✓', "o'brien\\x00"]) {
      const base = baseHashSql(':org::uuid', "'email'", ':value');
      for (const [wanted, found] of [
        [one.published(org, 'email', value), true],
        [two.published(org, 'email', value), true],
        [stranger.published(org, 'email', value), false],
        [plain(org, 'email', value), false],
      ] as const) {
        const { rows } = (await t.db.raw(`select ${two.sql(base)} as h, ${two.sqlMatches(base, ':wanted::text[]')} as found`, { ...two.sqlBindings(), org, value, wanted: [wanted] })) as {
          rows: Array<{ h: string; found: boolean }>;
        };
        expect({ value, wanted, row: rows[0] }).toEqual({ value, wanted, row: { h: two.of(org, 'email', value), found } });
      }
    }
  });

  it('refuses a process whose keys are not the ones the hashes are made with, and records a key appended', async () => {
    const db = await createTestDatabase([privacyMigrations]);
    try {
      await checkIdentifierHashKeys(db.db, one);
      await checkIdentifierHashKeys(db.db, one);
      // A key appended: recorded; a process not yet restarted (the first key alone) still passes.
      await checkIdentifierHashKeys(db.db, two);
      await checkIdentifierHashKeys(db.db, one);
      expect(await db.db('privacy.identifier_hash_keys').orderBy('layer').pluck('key_id')).toEqual(two.keyIds());
      const refused = /^IDENTIFIER_HASH_KEYS: key \d \(id [0-9a-f]{16}\) is not the key this database's identifier hashes are made with \(id [0-9a-f]{16}\); every service and svcctl need the same list, oldest first, and a key is never removed$/;
      // Another deployment's key, the list out of order, the first key removed, a different second key.
      for (const keys of [[randomBytes(32)], [k2, k1], [k2], [k1, randomBytes(32)]]) {
        await expect(checkIdentifierHashKeys(db.db, new IdentifierHashes(keys))).rejects.toThrow(refused);
      }
      expect(await db.db('privacy.identifier_hash_keys').orderBy('layer').pluck('key_id')).toEqual(two.keyIds());
    } finally {
      await db.drop();
    }
  });

  it('leaves nothing in a copy of the database that hashing a candidate value finds', async () => {
    // Every row of every table of the schema, as text: what a data-only dump of it holds.
    const tables = (await t.db('information_schema.tables').where({ table_schema: 'privacy' }).pluck('table_name')) as string[];
    expect(tables).toEqual(expect.arrayContaining(['suppressions', 'erasure_requests', 'subject_keys', 'audit_log']));
    let copy = '';
    for (const table of tables) {
      const { rows } = (await t.db.raw(`select coalesce(string_agg(x::text, E'\\n'), '') as text from privacy.${table} x`)) as { rows: Array<{ text: string }> };
      copy += rows[0]!.text;
    }
    expect(copy).toContain(two.of(org, 'email', 'ann@example.com'));
    for (const [type, value] of [...erased, ['email', 'twice@example.com'], ['anonymous_id', 'anon-kept'], ['anonymous_id', 'anon-rotating']] as const) {
      expect(copy).not.toContain(plain(org, type, value));
      expect(copy).not.toContain(value);
    }
  });
});

describe('identifier hash keys from the configuration', () => {
  it('parses the configured list, oldest first, or keeps a generated key in DATA_DIR', async () => {
    const [a, b] = [randomBytes(32), randomBytes(32)];
    const configured = await identifierHashes({ IDENTIFIER_HASH_KEYS: [a.toString('hex'), b.toString('base64')] });
    expect(configured.of('o', 'email', 'x')).toBe(new IdentifierHashes([a, b]).of('o', 'email', 'x'));
    await expect(identifierHashes({ IDENTIFIER_HASH_KEYS: ['abcd'] })).rejects.toThrow('each of IDENTIFIER_HASH_KEYS must be 32 bytes, as 64 hex digits or base64');
    await expect(identifierHashes({ IDENTIFIER_HASH_KEYS: [] })).rejects.toThrow('IDENTIFIER_HASH_KEYS is required');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-hash-keys-'));
    try {
      const first = await identifierHashes({ IDENTIFIER_HASH_KEYS: [] }, dir);
      expect((await identifierHashes({ IDENTIFIER_HASH_KEYS: [] }, dir)).of('o', 'email', 'x')).toBe(first.of('o', 'email', 'x'));
      expect(first.layers).toBe(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
