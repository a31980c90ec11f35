import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { ProfileErased } from '@svc/contracts';
import { IdentifierHashes } from '@svc/identity';
import { createLogger } from '@svc/runtime';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { createConsentErasureHandler } from './erasure';
import { consentMigrations } from './migrations';

/**
 * The consent records' one change besides publishing: an erasure's
 * redaction (consent 0002), which the trigger allows exactly, once; and the
 * tombstone consumer that makes it, for the erased person's records only.
 */
describeWithPostgres('consent records: the erasure redaction', () => {
  let t: TestDatabase;
  const org = randomUUID();
  const other = randomUUID();
  const keyId = randomUUID();
  // The consumer holds two keys (a rotation under way); the tombstone's hashes are keyed, computed by the database to match.
  const [k1, k2] = [randomBytes(32), randomBytes(32)];
  const hashes = new IdentifierHashes([k1, k2]);
  const previous = new IdentifierHashes([k1]);
  beforeAll(async () => {
    t = await createTestDatabase([consentMigrations]);
  });
  afterAll(() => t.drop());

  const insert = async (orgId: string, anonymousId: string, userId: string | null, published = true): Promise<string> => {
    const { rows } = await t.db.raw<{ rows: Array<{ id: string }> }>(
      `insert into consent.records (org_id, anonymous_id, user_id, purposes, source, client_timestamp, key_id, client_ip, user_agent, published_at)
       values (?, ?, ?, '{"analytics": true}', 'banner', now(), ?, '203.0.113.9', 'Mozilla/5.0', ${published ? 'now()' : 'null'}) returning id`,
      [orgId, anonymousId, userId, keyId],
    );
    return rows[0]!.id;
  };
  /** The redaction erasure.ts makes, with some assignments changed. */
  const redact = (id: string, changed: Record<string, string> = {}) => {
    const set = { anonymous_id: 'null', user_id: 'null', client_ip: 'null', user_agent: 'null', redacted_at: 'now()', erasure_id: `'${randomUUID()}'`, published_at: 'coalesce(published_at, now())', ...changed };
    return t.db.raw(`update consent.records set ${Object.entries(set).map(([column, value]) => `${column} = ${value}`).join(', ')} where id = ?`, [id]);
  };

  it.each([
    ['changes a purpose too', { purposes: `'{"analytics": false}'` }],
    ['keeps the user agent', { user_agent: 'user_agent' }],
    ['keeps the anonymous id', { anonymous_id: 'anonymous_id' }],
    ['moves the receive time', { received_at: "received_at - interval '1 day'" }],
    ['names no erasure', { erasure_id: 'null' }],
  ])('refuses a redaction that %s', async (_name, changed) => {
    const id = await insert(org, `anon-${randomUUID()}`, null);
    await expect(redact(id, changed)).rejects.toThrow(/append-only|records_subject_unless_redacted/);
  });

  it('allows the exact redaction once, and nothing after it', async () => {
    const id = await insert(org, `anon-${randomUUID()}`, 'u-x');
    await redact(id);
    await expect(redact(id)).rejects.toThrow(/append-only/);
    await expect(t.db.raw('delete from consent.records where id = ?', [id])).rejects.toThrow(/append-only/);
    await expect(t.db.raw(`update consent.records set source = 'api' where id = ?`, [id])).rejects.toThrow(/append-only/);
  });

  it("redacts the erased person's records (stitched anonymous ids, their user id, anonymous ids recorded with it), no one else's", async () => {
    const theirs = [
      await insert(org, 'anon-1', null),
      await insert(org, 'anon-2', 'u-1', false),
      await insert(org, 'anon-3', null), // recorded with u-1 below, so theirs too
      await insert(org, 'anon-3', 'u-1'),
    ];
    const notTheirs = [await insert(org, 'anon-4', null), await insert(other, 'anon-1', 'u-1')];
    const tombstone: ProfileErased = {
      v: 1,
      orgId: org,
      erasureId: randomUUID(),
      profileId: randomUUID(),
      profileIds: [randomUUID()],
      identifiers: [
        { type: 'anonymous_id', hash: hashes.published(org, 'anonymous_id', 'anon-1') },
        // Made by a process that did not have the newest key yet: found in its previous form.
        { type: 'user_id', hash: previous.published(org, 'user_id', 'u-1') },
      ],
      clickIds: [],
      erasedAt: new Date().toISOString(),
    };
    const handle = createConsentErasureHandler({ db: t.db, logger: createLogger({ name: 'consent-erasure-test', level: 'silent' }), hashes });
    const batch = { topic: 'profiles.erased', partition: 0, messages: [{ topic: 'profiles.erased', partition: 0, offset: '0', key: tombstone.profileId, value: tombstone, headers: {}, timestamp: new Date() }] };
    await handle(batch);
    // Redelivered: nothing more to do, and no error.
    await handle(batch);
    const rows = (await t.db('consent.records').whereIn('id', [...theirs, ...notTheirs]).select('*')) as Array<Record<string, unknown>>;
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const id of theirs) {
      expect(byId.get(id)).toMatchObject({ anonymous_id: null, user_id: null, client_ip: null, user_agent: null, erasure_id: tombstone.erasureId, purposes: { analytics: true }, source: 'banner', key_id: keyId });
      expect(byId.get(id)?.published_at).not.toBeNull();
      expect(byId.get(id)?.redacted_at).not.toBeNull();
    }
    for (const id of notTheirs) expect(byId.get(id)).toMatchObject({ redacted_at: null, client_ip: '203.0.113.9' });
  });
});
