import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { ok, svcctl } from './test-support/run';

const SECRETS = ['developer-token-secret', 'client-secret-secret', 'refresh-token-secret', 'meta-access-token-secret'];
const google = {
  customer_id: '123-456-7890',
  conversion_action_id: '555',
  client_id: 'client-id',
  developer_token: SECRETS[0],
  client_secret: SECRETS[1],
  refresh_token: SECRETS[2],
};

describeWithPostgres('svcctl connector and conversions commands', () => {
  let t: TestDatabase;
  let dataDir: string;
  let orgId: string;
  const env = { CONNECTOR_SECRET_KEY: randomBytes(32).toString('hex') };
  beforeAll(async () => {
    t = await createTestDatabase();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'svcctl-connectors-'));
    orgId = String((await ok(t.url, ['org', 'create', '--name', 'Shop'])).id);
  });
  afterAll(async () => {
    await t.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('adds, lists, disables and enables connectors, never printing or storing a secret in clear', async () => {
    const added = (await ok(t.url, ['connector', 'add', '--org', orgId, '--platform', 'google_ads', '--config', JSON.stringify(google)], env)).connector as Record<string, unknown>;
    expect(added).toMatchObject({
      org_id: orgId,
      platform: 'google_ads',
      state: 'active',
      settings: { customer_id: '123-456-7890', conversion_action_id: '555', client_id: 'client-id' },
      secrets_set: ['developer_token', 'client_secret', 'refresh_token'],
      event_names: null,
    });
    const meta = (await ok(t.url, ['connector', 'add', '--org', orgId, '--platform', 'meta', '--config', JSON.stringify({ pixel_id: '42', access_token: SECRETS[3] }), '--events', 'Order Completed,purchase'], env))
      .connector as Record<string, unknown>;
    expect(meta).toMatchObject({ platform: 'meta', event_names: ['Order Completed', 'purchase'], secrets_set: ['access_token'] });

    // Listing needs no key, and shows no secret.
    const listed = await ok(t.url, ['connector', 'list', '--org', orgId]);
    expect((listed.connectors as unknown[]).length).toBe(2);
    const stored = JSON.stringify((await t.db.raw("select settings, encode(sealed_secrets, 'escape') as sealed from conversions.connectors")).rows);
    for (const secret of SECRETS) {
      expect(JSON.stringify(listed)).not.toContain(secret);
      expect(stored).not.toContain(secret);
    }

    expect((await ok(t.url, ['connector', 'disable', '--id', String(added.id)])).connector).toMatchObject({ state: 'disabled' });
    // A second active Google Ads connector is allowed only while the first is disabled.
    const second = (await ok(t.url, ['connector', 'add', '--org', orgId, '--platform', 'google_ads', '--config', JSON.stringify(google)], env)).connector as Record<string, unknown>;
    const clash = await svcctl(t.url, ['connector', 'enable', '--id', String(added.id)]);
    expect(clash.code).toBe(1);
    expect(JSON.parse(clash.stderr)).toEqual({ error: `organization ${orgId} already has an active google_ads connector; disable it first` });
    await ok(t.url, ['connector', 'disable', '--id', String(second.id)]);
    expect((await ok(t.url, ['connector', 'enable', '--id', String(added.id)])).connector).toMatchObject({ state: 'active' });
  });

  it.each([
    [['--platform', 'tiktok', '--config', '{}'], 1, '--platform must be one of google_ads, meta (got "tiktok")'],
    [['--platform', 'meta', '--config', `{"access_token":"${SECRETS[3]}"`], 1, '--config must be valid JSON'],
    [['--platform', 'meta', '--config', JSON.stringify({ access_token: SECRETS[3] })], 1, 'invalid meta config: pixel_id: required'],
    [['--platform', 'google_ads', '--config', JSON.stringify({ ...google, api_base_url: 'http://ads.example.com' })], 1, 'invalid google_ads config: api_base_url: must be an https URL (http only for localhost)'],
    [['--platform', 'meta', '--config', JSON.stringify({ pixel_id: '1', access_token: 'x' }), '--events', ','], 1, '--events must name at least one event'],
    [['--platform', 'meta'], 2, 'missing required --config. Usage: svcctl connector add'],
  ])('refuses %j with exit %i and never echoes a secret', async (args, code, message) => {
    const before = Number((await t.db.raw('select count(*) as n from conversions.connectors')).rows[0].n);
    const run = await svcctl(t.url, ['connector', 'add', '--org', orgId, ...args], env);
    expect(run.code).toBe(code);
    expect((JSON.parse(run.stderr) as { error: string }).error).toContain(message);
    for (const secret of SECRETS) expect(run.stderr + run.stdout).not.toContain(secret);
    expect(Number((await t.db.raw('select count(*) as n from conversions.connectors')).rows[0].n)).toBe(before);
  });

  it('refuses a connector for an unknown organisation', async () => {
    const run = await svcctl(t.url, ['connector', 'add', '--org', '00000000-0000-4000-8000-000000000000', '--platform', 'meta', '--config', JSON.stringify({ pixel_id: '1', access_token: 'x' })], env);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stderr)).toEqual({ error: 'organization 00000000-0000-4000-8000-000000000000 not found' });
  });

  it('without CONNECTOR_SECRET_KEY uses the key kept in DATA_DIR', async () => {
    const other = String((await ok(t.url, ['org', 'create', '--name', 'Other'])).id);
    const run = await ok(t.url, ['connector', 'add', '--org', other, '--platform', 'meta', '--config', JSON.stringify({ pixel_id: '7', access_token: 'x' })], { DATA_DIR: dataDir, CONNECTOR_SECRET_KEY: '' });
    expect(run.connector).toMatchObject({ platform: 'meta' });
  });

  it('lists the queue without secrets or contact details, filtered by status', async () => {
    const [connector] = (await t.db('conversions.connectors').where({ org_id: orgId, platform: 'meta' })) as Array<{ id: string }>;
    const conversion = {
      messageId: 'm-1',
      eventName: 'purchase',
      eventTime: '2026-11-21T10:00:00.000Z',
      value: 12.5,
      currency: 'USD',
      orderId: 'o-1',
      hashedEmail: 'a'.repeat(64),
      hashedPhone: 'b'.repeat(64),
      hashedPhoneDigits: 'c'.repeat(64),
      clientIp: '203.0.113.1',
      userAgent: 'UA',
      pageUrl: null,
      click: { type: 'fbclid', id: 'FBCLID', firstSeenAt: '2026-11-20T10:00:00.000Z' },
    };
    await t.db('conversions.queue').insert([
      { org_id: orgId, connector_id: connector!.id, platform: 'meta', message_id: 'm-1', event_id: '00000000-0000-4000-8000-000000000001', profile_id: '00000000-0000-4000-8000-000000000002', event_name: 'purchase', order_id: 'o-1', conversion: JSON.stringify(conversion), status: 'sent', attempts: 1, last_status: 200 },
      { org_id: orgId, connector_id: connector!.id, platform: 'meta', message_id: 'm-2', event_id: '00000000-0000-4000-8000-000000000003', profile_id: '00000000-0000-4000-8000-000000000002', event_name: 'lead', order_id: null, conversion: JSON.stringify({ ...conversion, messageId: 'm-2' }), status: 'failed', attempts: 1, last_status: 400, last_error: 'Invalid parameter' },
    ]);
    const all = (await ok(t.url, ['conversions', 'list', '--org', orgId])).conversions as Array<Record<string, unknown>>;
    expect(all.map((c) => [c.message_id, c.status])).toEqual([
      ['m-2', 'failed'],
      ['m-1', 'sent'],
    ]);
    expect(all[1]).toMatchObject({ platform: 'meta', event_name: 'purchase', order_id: 'o-1', value: 12.5, currency: 'USD', click_type: 'fbclid', attempts: 1, last_status: 200 });
    expect(JSON.stringify(all)).not.toMatch(/aaaa|bbbb|cccc|203\.0\.113\.1|FBCLID/);
    const failed = (await ok(t.url, ['conversions', 'list', '--org', orgId, '--status', 'failed'])).conversions as Array<Record<string, unknown>>;
    expect(failed).toEqual([expect.objectContaining({ message_id: 'm-2', last_error: 'Invalid parameter' })]);
    const bad = await svcctl(t.url, ['conversions', 'list', '--org', orgId, '--status', 'lost']);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stderr)).toEqual({ error: '--status must be one of queued, sent, failed, dead (got "lost")' });
  });
});
