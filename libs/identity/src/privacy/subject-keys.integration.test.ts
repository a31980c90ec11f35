import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { masterKeyRing } from './config';
import { IdentifierHashes } from './hash';
import { privacyMigrations } from './migrations';
import { DataKeyReader, MasterKeyRing, SUBJECT_KEY_HOLD_MS, SubjectKeys, deleteSubjectKeys, rewrapSubjectKeys, subjectKeysByMasterKey } from './subject-keys';

describeWithPostgres('the raw log\'s data keys (privacy.subject_keys)', () => {
  let t: TestDatabase;
  const ring = new MasterKeyRing(randomBytes(32));
  const hashes = new IdentifierHashes([randomBytes(32)]);
  beforeAll(async () => {
    t = await createTestDatabase([privacyMigrations]);
  });
  afterAll(() => t.drop());

  it('makes one key per organisation and anonymous id, the same for every process, kept only wrapped and named by hash', async () => {
    const org = randomUUID();
    const [one, two] = [new SubjectKeys(t.db, ring, hashes), new SubjectKeys(t.db, ring, hashes)];
    // Two processes meeting the same new visitors at once (in any order) agree on one key each, and never deadlock.
    const [a, b] = await Promise.all([one.forSubjects(org, ['anon-1', 'anon-2', 'anon-1']), two.forSubjects(org, ['anon-2', 'anon-1'])]);
    const raceOrg = randomUUID();
    for (let round = 0; round < 20; round++) {
      const visitors = Array.from({ length: 20 }, (_, i) => `anon-race-${round}-${i}`);
      const [x, y] = await Promise.all([new SubjectKeys(t.db, ring, hashes).forSubjects(raceOrg, visitors), new SubjectKeys(t.db, ring, hashes).forSubjects(raceOrg, [...visitors].reverse())]);
      for (const v of visitors) expect(x.get(v)!.id).toBe(y.get(v)!.id);
    }
    expect(a.get('anon-1')!.id).toBe(b.get('anon-1')!.id);
    expect(a.get('anon-1')!.key.equals(b.get('anon-1')!.key)).toBe(true);
    expect(a.get('anon-2')!.id).toBe(b.get('anon-2')!.id);
    expect(a.get('anon-1')!.id).not.toBe(a.get('anon-2')!.id);
    // Another organisation's visitor of the same id: another key.
    expect((await one.forSubjects(randomUUID(), ['anon-1'])).get('anon-1')!.id).not.toBe(a.get('anon-1')!.id);

    const rows = (await t.db('privacy.subject_keys').where({ org_id: org }).select('*')) as Array<{ subject_hash: string; wrapped_key: Buffer; master_key_id: string }>;
    expect(rows.map((r) => r.subject_hash).sort()).toEqual([hashes.of(org, 'anonymous_id', 'anon-1'), hashes.of(org, 'anonymous_id', 'anon-2')].sort());
    for (const r of rows) {
      expect(r.master_key_id).toBe(ring.current.id);
      expect(r.wrapped_key.includes(a.get('anon-1')!.key)).toBe(false);
      expect(JSON.stringify(r)).not.toContain('anon-');
    }
  });

  it('serves a held key without the database, reads it again after the hold, and makes a new one once an erasure deleted it', async () => {
    const org = randomUUID();
    let now = Date.now();
    const keys = new SubjectKeys(t.db, ring, hashes, { now: () => now });
    const first = (await keys.forSubjects(org, ['anon-held'])).get('anon-held')!;
    let queries = 0;
    const count = () => void queries++;
    t.db.on('query', count);
    try {
      expect((await keys.forSubjects(org, ['anon-held'])).get('anon-held')).toEqual(first);
      expect(queries).toBe(0);

      expect(await deleteSubjectKeys(t.db, org, [hashes.of(org, 'anonymous_id', 'anon-held')])).toBe(1);
      // Within the hold the process still seals with it (the resolver drops those events as erased).
      expect((await keys.forSubjects(org, ['anon-held'])).get('anon-held')!.id).toBe(first.id);
      now += SUBJECT_KEY_HOLD_MS + 1;
      const fresh = (await keys.forSubjects(org, ['anon-held'])).get('anon-held')!;
      expect(fresh.id).not.toBe(first.id);
      expect(queries).toBeGreaterThan(0);
    } finally {
      t.db.removeListener('query', count);
    }
  });

  it('reads keys by id for opening: an erased one is absent, another organisation\'s is not served, a tampered one fails loudly', async () => {
    const org = randomUUID();
    const made = await new SubjectKeys(t.db, ring, hashes).forSubjects(org, ['anon-a', 'anon-b']);
    const [ka, kb] = [made.get('anon-a')!, made.get('anon-b')!];
    const reader = new DataKeyReader(t.db, ring);
    const read = await reader.read([{ orgId: org, keyId: ka.id }, { orgId: org, keyId: kb.id }, { orgId: org, keyId: randomUUID() }]);
    expect([...read.keys()].sort()).toEqual([ka.id, kb.id].sort());
    expect(read.get(ka.id)!.equals(ka.key)).toBe(true);
    expect((await new DataKeyReader(t.db, ring).read([{ orgId: randomUUID(), keyId: ka.id }])).size).toBe(0);

    await deleteSubjectKeys(t.db, org, [hashes.of(org, 'anonymous_id', 'anon-b')]);
    expect([...(await new DataKeyReader(t.db, ring).read([{ orgId: org, keyId: kb.id }])).keys()]).toEqual([]);

    await t.db('privacy.subject_keys').where({ key_id: ka.id }).update({ wrapped_key: randomBytes(61) });
    await expect(new DataKeyReader(t.db, ring).read([{ orgId: org, keyId: ka.id }])).rejects.toThrow(/does not open under master key/);
    // Under a master key no process holds: loud too, never taken for erased.
    await t.db('privacy.subject_keys').where({ key_id: ka.id }).update({ master_key_id: 'ffffffffffffffff' });
    await expect(new DataKeyReader(t.db, ring).read([{ orgId: org, keyId: ka.id }])).rejects.toThrow(/RAW_LOG_MASTER_KEY/);
    await t.db('privacy.subject_keys').where({ key_id: ka.id }).delete();
  });

  it('rotates the master key: rewrap moves every key under the new one, after which the old one can go', async () => {
    const org = randomUUID();
    const old = randomBytes(32);
    const before = await new SubjectKeys(t.db, new MasterKeyRing(old), hashes).forSubjects(org, Array.from({ length: 7 }, (_, i) => `anon-r${i}`));
    // The earlier tests' keys are under `ring`: retired too, as every key a deployment used until rewrapped.
    const rotated = new MasterKeyRing(randomBytes(32), [old, ring.current.key]);
    expect((await subjectKeysByMasterKey(t.db)).find((m) => m.masterKeyId === rotated.current.id)).toBeUndefined();
    expect(await rewrapSubjectKeys(t.db, rotated, 3)).toBeGreaterThanOrEqual(7);
    expect((await subjectKeysByMasterKey(t.db)).map((m) => m.masterKeyId)).toEqual([rotated.current.id]);
    // The new master key alone opens them, to the same data keys.
    const alone = new MasterKeyRing(rotated.current.key);
    const read = await new DataKeyReader(t.db, alone).read([...before.values()].map((k) => ({ orgId: org, keyId: k.id })));
    for (const k of before.values()) expect(read.get(k.id)!.equals(k.key)).toBe(true);
    expect(await rewrapSubjectKeys(t.db, rotated)).toBe(0);
  });
});

describe('the master key from the configuration', () => {
  it('parses the configured keys, or keeps a generated one in DATA_DIR readable by its owner only', async () => {
    const hex = randomBytes(32).toString('hex');
    const retired = randomBytes(32).toString('base64');
    const configured = await masterKeyRing({ RAW_LOG_MASTER_KEY: hex, RAW_LOG_MASTER_KEYS_RETIRED: [retired] });
    expect(configured.current.key.toString('hex')).toBe(hex);
    expect(configured.key(new MasterKeyRing(Buffer.from(retired, 'base64')).current.id)).toBeDefined();
    await expect(masterKeyRing({ RAW_LOG_MASTER_KEY: 'abcd', RAW_LOG_MASTER_KEYS_RETIRED: [] })).rejects.toThrow('RAW_LOG_MASTER_KEY must be 32 bytes, as 64 hex digits or base64');
    await expect(masterKeyRing({ RAW_LOG_MASTER_KEYS_RETIRED: [] })).rejects.toThrow('RAW_LOG_MASTER_KEY is required');

    const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-master-'));
    try {
      const first = await masterKeyRing({ RAW_LOG_MASTER_KEYS_RETIRED: [] }, dir);
      expect((await masterKeyRing({ RAW_LOG_MASTER_KEYS_RETIRED: [] }, dir)).current.id).toBe(first.current.id);
      expect((await stat(path.join(dir, 'raw-log-master.key'))).mode & 0o777).toBe(0o600);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
