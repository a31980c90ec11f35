import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { ProfileErased } from '@svc/contracts';
import { ERASED_PROFILE_ID, conversionsMigrations } from '@svc/conversions';
import { IdentifierHashes } from '@svc/identity';
import { createLogger } from '@svc/runtime';
import { AccountsStore, accountsMigrations } from '@svc/accounts';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { createErasureHandler } from './erasure';

/**
 * The forwarder's part of an erasure, from the tombstone: conversions never
 * sent are deleted, sent ones keep only what the platform received (hashed),
 * the person's exhausted clicks go; nothing of anyone else changes.
 */
describeWithPostgres('conversion forwarder: erasure', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase([accountsMigrations, conversionsMigrations]);
  });
  afterAll(() => t.drop());

  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  const [k1, k2] = [randomBytes(32), randomBytes(32)];
  const hashes = new IdentifierHashes([k1, k2]);
  const previous = new IdentifierHashes([k1]);

  it('deletes unsent conversions, hashes what a sent one holds in clear, and drops the exhausted click marks', async () => {
    const accounts = new AccountsStore(t.db);
    const org = (await accounts.createOrganization({ name: 'Shop' })).id;
    const [connector] = (await t.db('conversions.connectors')
      .insert({ org_id: org, platform: 'meta', settings: JSON.stringify({}), sealed_secrets: Buffer.from('x') })
      .returning('id')) as Array<{ id: string }>;
    const [ann, bob] = [randomUUID(), randomUUID()];
    const conversion = (order: string, click: string) => ({
      messageId: `msg-${order}`,
      eventName: 'purchase',
      eventTime: '2026-11-20T10:00:00.000Z',
      value: 10,
      currency: 'EUR',
      orderId: order,
      hashedEmail: sha('ann@example.com'),
      hashedPhone: null,
      hashedPhoneDigits: null,
      clientIp: '203.0.113.9',
      userAgent: 'Mozilla/5.0',
      pageUrl: 'https://shop.example.com/checkout?email=ann@example.com',
      click: { type: 'fbclid', id: click, firstSeenAt: '2026-11-19T10:00:00.000Z' },
    });
    const row = (profileId: string, order: string, status: string, click = 'IwAR-ann') => ({
      org_id: org,
      connector_id: connector!.id,
      platform: 'meta',
      message_id: `msg-${order}`,
      event_id: randomUUID(),
      profile_id: profileId,
      event_name: 'purchase',
      order_id: order,
      conversion: JSON.stringify(conversion(order, click)),
      status,
    });
    await t.db('conversions.queue').insert([row(ann, 'o-1', 'sent'), row(ann, 'o-2', 'queued'), row(ann, 'o-3', 'failed'), row(ann, 'o-4', 'dead'), row(bob, 'o-5', 'queued', 'IwAR-bob')]);
    await t.db('conversions.exhausted_click_ids').insert([
      { org_id: org, click_type: 'fbclid', click_id: 'IwAR-ann' },
      { org_id: org, click_type: 'fbclid', click_id: 'IwAR-bob' },
    ]);

    const tombstone: ProfileErased = {
      v: 1,
      orgId: org,
      erasureId: randomUUID(),
      profileId: ann,
      profileIds: [ann],
      identifiers: [],
      // Made by a process one key behind (a rotation under way): matched in its previous form.
      clickIds: [{ type: 'fbclid', hash: previous.published(org, 'fbclid', 'IwAR-ann') }],
      erasedAt: new Date().toISOString(),
    };
    const handle = createErasureHandler({ db: t.db, logger: createLogger({ name: 'forwarder-erasure-test', level: 'silent' }), hashes });
    const batch = { topic: 'profiles.erased', partition: 0, messages: [{ topic: 'profiles.erased', partition: 0, offset: '0', key: ann, value: tombstone, headers: {}, timestamp: new Date() }] };
    await handle(batch);
    await handle(batch);

    // What a sent row keeps in place of a clear value: keyed, so a copy of the table cannot be searched by hashing candidates (every IPv4 address).
    const keyed = (field: string, value: string) => hashes.of(org, field, value);
    const rows = (await t.db('conversions.queue').where({ org_id: org }).orderBy('id').select('profile_id', 'status', 'message_id', 'order_id', 'conversion')) as Array<{
      profile_id: string;
      status: string;
      message_id: string;
      order_id: string;
      conversion: Record<string, unknown>;
    }>;
    expect(rows.map((r) => [r.profile_id, r.status])).toEqual([
      [ERASED_PROFILE_ID, 'sent'],
      [bob, 'queued'],
    ]);
    expect(rows[0]).toEqual({
      profile_id: ERASED_PROFILE_ID,
      status: 'sent',
      message_id: keyed('messageId', 'msg-o-1'),
      order_id: keyed('orderId', 'o-1'),
      conversion: {
        redacted: true,
        messageId: keyed('messageId', 'msg-o-1'),
        eventName: 'purchase',
        eventTime: '2026-11-20T10:00:00.000Z',
        value: 10,
        currency: 'EUR',
        orderId: keyed('orderId', 'o-1'),
        hashedEmail: sha('ann@example.com'),
        hashedPhone: null,
        hashedPhoneDigits: null,
        clientIp: keyed('clientIp', '203.0.113.9'),
        userAgent: keyed('userAgent', 'Mozilla/5.0'),
        pageUrl: keyed('pageUrl', 'https://shop.example.com/checkout?email=ann@example.com'),
        click: { type: 'fbclid', id: keyed('clickId', 'IwAR-ann'), firstSeenAt: '2026-11-19T10:00:00.000Z' },
      },
    });
    expect(rows[1]!.conversion).toMatchObject({ clientIp: '203.0.113.9', click: { id: 'IwAR-bob' } });
    expect(await t.db('conversions.exhausted_click_ids').where({ org_id: org }).pluck('click_id')).toEqual(['IwAR-bob']);
  });
});
