/**
 * Issue 21, end to end on the real stack and both bus tiers: a person
 * ingested across two devices (merged on identify), with consent decisions
 * and conversions (one sent, one still queued); erased by email with
 * `svcctl erase`. Every table then holds nothing of them (the replay backup
 * a `svcctl replay` kept before included), the tombstone is on
 * profiles.erased, a new event with their userId is dropped (and counted),
 * a `svcctl replay` afterwards does not bring them back (their events in
 * the raw log no longer open: their keys were erased), nor does one after
 * every suppression is lifted; the raw log, read straight from its table or
 * topic, never holds them in clear; and another organisation with
 * identical identifiers is untouched. The erasure routes' bad requests get
 * their documented answers.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { prefixedTopics, readToEnd, type Bus } from '@svc/bus';
import { Limits, Messages, type ProfileErased } from '@svc/contracts';
import { documentedFetch } from '@svc/openapi';
import type { Db } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { describeWithKafka, describeWithPostgres, kafkaEnv, pollForValue, readRawKafkaTopic, runNode, type TestDatabase } from '@svc/testkit';
import { startStackWithMeta, type StackWithMeta } from './test-support/stack-with-meta';

const SVCCTL = path.resolve(__dirname, '../../../tools/svcctl/dist/main.js');
type Tier = 'postgres-log' | 'kafka';

/** What the erased person is made of: none of it may be left in any table of their organisation. */
const ANN = {
  email: 'Ann@Example.com',
  userId: 'u-ann',
  devices: ['anon-ann-d1', 'anon-ann-d2'],
  phone: '+44 20 7946 0958',
  fbclid: 'IwAR-ann-click-0001',
  fingerprint: 'fp-ann-0001',
  sessions: ['sess-ann-1', 'sess-ann-2'],
  orders: ['ord-ann-1', 'ord-ann-2'],
};
const TRACES = [
  'ann@example.com',
  ANN.userId,
  ...ANN.devices,
  'anon-ann-d3',
  '+442079460958',
  ANN.fbclid,
  ANN.fingerprint,
  ...ANN.sessions,
  ...ANN.orders,
];

interface Org {
  orgId: string;
  keys: { write: string; read: string; admin: string };
}

function erasureSuite(tier: Tier): void {
  let running: StackWithMeta;
  let t: TestDatabase;
  let dataDir: string;
  let bus: Bus;
  /** What the stand-in for Meta's Conversions API answers. */
  let metaStatus = 200;
  let base: string;
  let root: string;
  const prefix = `erase${randomBytes(4).toString('hex')}.`;
  const topics = prefixedTopics(prefix);
  const busEnv: Record<string, string> = { TOPIC_PREFIX: prefix, ...(tier === 'kafka' ? kafkaEnv() : {}) };
  let a: Org;
  let b: Org;

  beforeAll(async () => {
    running = await startStackWithMeta(`erasure-${tier}`, {
      busEnv,
      env: {
        // Each request's X-Forwarded-For is its client, so the per-IP limits can be tested one IP at a time.
        TRUSTED_PROXIES: '127.0.0.1/32',
        FORWARDER_POLL_INTERVAL_MS: '100',
        // A refused delivery stays queued (its retry is minutes away): the unsent conversion.
        FORWARDER_RETRY_BASE_MS: '600000',
        OUTBOX_RELAY_INTERVAL_MS: '100',
      },
      metaStatus: () => metaStatus,
    });
    ({ t, dataDir, bus } = running);
    root = running.stack.url;
    base = `${root}/functions/v1`;
    const accounts = new AccountsStore(t.db);
    const org = async (name: string): Promise<Org> => {
      const { id } = await accounts.createOrganization({ name });
      const key = async (type: 'write' | 'read' | 'admin') => (await accounts.createApiKey({ orgId: id, type })).key;
      await running.connectToMeta(id);
      return { orgId: id, keys: { write: await key('write'), read: await key('read'), admin: await key('admin') } };
    };
    [a, b] = [await org('Erasing'), await org('Bystander')];
  }, 180_000);

  afterAll(async () => running?.stop(), 120_000);

  const ip = () => `198.51.100.${1 + Math.floor(Math.random() * 250)}`;
  const call = (method: string, route: string, key: string | undefined, body?: unknown, from = ip()) =>
    documentedFetch(`${base}${route}`, {
      method,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json', 'x-forwarded-for': from },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> });

  const send = async (org: Org, events: Array<Record<string, unknown>>): Promise<string[]> => {
    const at = new Date().toISOString();
    const batch = events.map((e) => ({ messageId: randomUUID(), timestamp: at, ...e }));
    const res = await call('POST', '/v1-batch', org.keys.write, { batch });
    expect(await res.json()).toMatchObject({ success: true, processed: batch.length, failed: 0 });
    return batch.map((e) => e.messageId);
  };
  const stored = async (org: Org, messageIds: string[]) =>
    until(async () => {
      const n = Number((await t.db('identity.events').where({ org_id: org.orgId }).whereIn('message_id', messageIds).count<Array<{ n: string }>>({ n: '*' }))[0]?.n);
      return n === messageIds.length ? true : undefined;
    });
  const svcctl = async (args: string[]): Promise<Record<string, unknown>> => {
    // The stack's DATA_DIR: svcctl opens the raw log with the master key the stack keeps there.
    const run = await runNode(SVCCTL, args, { DATABASE_URL: t.url, DATA_DIR: dataDir, ...busEnv });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(run.stdout) as Record<string, unknown>;
  };

  /** Ann on her first device: a click, a session, a fingerprint (consented), identified with email and phone. */
  const firstDevice = async (org: Org): Promise<void> => {
    await stored(org, await send(org, [
      { type: 'page', anonymousId: ANN.devices[0], context: { campaign: { source: 'facebook', fbclid: ANN.fbclid }, session: { id: ANN.sessions[0] }, fingerprint: { hash: ANN.fingerprint }, consent: true } },
      { type: 'identify', anonymousId: ANN.devices[0], userId: ANN.userId, traits: { email: ANN.email, phone: ANN.phone, name: 'Ann' } },
    ]));
  };
  /** Her second device (its profile merged into hers when it identifies), and her consent decisions. */
  const secondDevice = async (org: Org): Promise<void> => {
    const [d1, d2] = ANN.devices as [string, string];
    await stored(org, await send(org, [{ type: 'page', anonymousId: d2, context: { session: { id: ANN.sessions[1] } } }]));
    await stored(org, await send(org, [{ type: 'identify', anonymousId: d2, userId: ANN.userId }]));
    for (const [anonymousId, userId, purposes] of [[d1, undefined, { analytics: true, fingerprinting: true }], [d2, ANN.userId, { analytics: false }]] as const) {
      const res = await call('POST', '/v1-consent', org.keys.write, { anonymousId, ...(userId ? { userId } : {}), purposes, source: 'banner' });
      expect(res.status).toBe(200);
    }
  };
  const buy = async (org: Org, order: string): Promise<void> => {
    await stored(org, await send(org, [{ type: 'track', event: 'purchase', anonymousId: ANN.devices[0], userId: ANN.userId, properties: { value: 10, currency: 'EUR', order_id: order } }]));
  };
  /** The raw log as stored, key and value as text: the log table's rows (Postgres-backed log) or the topic's records (Kafka). */
  const rawLog = async (): Promise<string> => {
    if (tier === 'kafka') {
      const count = (await bus.endOffsets(topics.eventsRaw)).reduce((sum, end) => sum + Number(end), 0);
      return (await readRawKafkaTopic(topics.eventsRaw.name, count)).map((m) => `${m.key} ${m.value.toString('latin1')}`).join('\n');
    }
    const rows = (await t.db('bus.messages').where({ topic: topics.eventsRaw.name }).select('key', t.db.raw('value::text as value'))) as Array<{ key: string; value: string }>;
    return rows.map((r) => `${r.key} ${r.value}`).join('\n');
  };
  /** What of the person (and of any client address) the raw log holds in clear. */
  const inClear = async (): Promise<string[]> => {
    const raw = (await rawLog()).toLowerCase();
    // Each trace holds a character base64 lacks (or is long), so a sealed blob cannot hold it by chance.
    return [...TRACES, ANN.phone, '198.51.100.'].filter((trace) => raw.includes(trace.toLowerCase()));
  };
  const queue = (org: Org) => t.db('conversions.queue').where({ org_id: org.orgId }).orderBy('id').select<Array<{ status: string; attempts: number; profile_id: string; conversion: Record<string, unknown> }>>('*');

  it('erases a person from every store by email, keeps them erased through new events and a replay, and leaves the other organisation untouched', async () => {
    for (const org of [a, b]) await firstDevice(org);
    // A replay now keeps the projections it replaces, the person included: they must go too when she is erased.
    expect(await svcctl(['replay'])).toMatchObject({ suppressed: 0 });
    for (const org of [a, b]) await secondDevice(org);
    // Two devices, one person: the second device's profile merged into the user's.
    await until(async () => {
      const live = await t.db('identity.profiles').where({ org_id: a.orgId }).whereNull('merged_into').count<Array<{ n: string }>>({ n: '*' });
      return Number(live[0]?.n) === 1 ? true : undefined;
    });
    expect(Number((await t.db('identity.merges').where({ org_id: a.orgId }).count<Array<{ n: string }>>({ n: '*' }))[0]?.n)).toBe(1);

    for (const org of [a, b]) await buy(org, ANN.orders[0]!);
    for (const org of [a, b]) await until(async () => ((await queue(org)).some((r) => r.status === 'sent') ? true : undefined));
    metaStatus = 503;
    for (const org of [a, b]) await buy(org, ANN.orders[1]!);
    for (const org of [a, b]) await until(async () => ((await queue(org)).some((r) => r.status === 'queued' && r.attempts > 0) ? true : undefined));
    await until(async () => ((await t.db('consent.records').whereNull('published_at').first()) ? undefined : true));

    expect((await traces(t.db, a.orgId)).filter((found) => found.startsWith('identity_before_replay_'))).not.toEqual([]);
    const bystander = await organisationRows(t.db, b.orgId);
    // The raw log, read straight from its store, holds her events sealed: no email, phone, id, click, address in clear.
    expect(await inClear()).toEqual([]);

    // Erase by email (any spelling of it), as an operator.
    const requested = await svcctl(['erase', '--org', a.orgId, '--email', ' ANN@example.com', '--reason', 'DSR 4411']);
    expect(requested).toMatchObject({ status: 'pending', requested_by_kind: 'email', reason: 'DSR 4411', actor: expect.stringMatching(/^svcctl:/) });
    const erasureId = String(requested.id);
    const done = await until(async () => {
      const { status, body } = await json(await call('GET', `/v1-profiles/${erasureId}/erase`, a.keys.admin));
      expect(status).toBe(200);
      return (body.erasure as { status: string }).status === 'pending' ? undefined : (body.erasure as Record<string, unknown>);
    });
    expect(done).toMatchObject({ id: erasureId, status: 'done', profiles_erased: 2, failure_reason: null });
    expect(await svcctl(['erase', 'status', '--org', a.orgId, '--id', erasureId])).toMatchObject({ status: 'done' });

    // The forwarder and the consent API act on the tombstone.
    await until(async () => {
      const rows = await queue(a);
      const consent = await t.db('consent.records').where({ org_id: a.orgId }).whereNull('redacted_at').first();
      return rows.length === 1 && rows[0]!.status === 'sent' && !consent ? true : undefined;
    });
    // Nothing of the person in any table of the organisation (the replay backup included); the raw log keeps their events, sealed under keys that are gone.
    expect(await traces(t.db, a.orgId)).toEqual([]);
    for (const table of ['profiles', 'identity_signals', 'events', 'profile_sessions', 'click_ids', 'fingerprints', 'merges', 'canonical_ids']) {
      expect([table, Number((await t.db(`identity.${table}`).where({ org_id: a.orgId }).count<Array<{ n: string }>>({ n: '*' }))[0]?.n)]).toEqual([table, 0]);
    }
    // The sent conversion keeps what Meta received, hashed; the queued one is gone.
    const [sent] = await queue(a);
    expect(sent).toMatchObject({ profile_id: '00000000-0000-0000-0000-000000000000', conversion: { redacted: true, eventName: 'purchase', value: 10, currency: 'EUR', click: { type: 'fbclid', id: expect.stringMatching(/^k1\.[0-9a-f]{64}$/) } } });
    // Consent: only that a decision existed (purposes, source, times, key).
    const consent = await t.db('consent.records').where({ org_id: a.orgId }).select('*');
    expect(consent).toHaveLength(2);
    for (const r of consent) expect(r).toMatchObject({ anonymous_id: null, user_id: null, client_ip: null, user_agent: null, erasure_id: erasureId, source: 'banner', purposes: expect.any(Object) });

    // The tombstone, keyed like the profile topics, without personal data.
    let tombstone: { key: string; value: ProfileErased } | undefined;
    await until(async () => {
      await readToEnd<ProfileErased>(bus, topics.profilesErased, async (messages) => {
        for (const m of messages) if (m.value.erasureId === erasureId) tombstone = { key: m.key, value: m.value };
      });
      return tombstone;
    });
    expect(tombstone!.key).toBe(tombstone!.value.profileId);
    expect(tombstone!.value).toMatchObject({ orgId: a.orgId, profileIds: expect.arrayContaining([tombstone!.value.profileId]) });
    expect(tombstone!.value.profileIds).toHaveLength(2);
    expect(tombstone!.value.identifiers.map((i) => i.type).sort()).toEqual(['anonymous_id', 'anonymous_id', 'email', 'phone', 'user_id']);
    expect(TRACES.filter((trace) => JSON.stringify(tombstone).includes(trace))).toEqual([]);

    // The other organisation's identical identifiers: untouched.
    expect(await organisationRows(t.db, b.orgId)).toEqual(bystander);

    // A new event with the person's userId is dropped (not an error for the client), and counted; others are stored.
    const [returning, other] = await send(a, [
      { type: 'track', event: 'viewed', anonymousId: 'anon-ann-d3', userId: ANN.userId },
      { type: 'page', anonymousId: 'anon-someone-else' },
    ]);
    await stored(a, [other!]);
    await until(async () => ((await suppressedCount(root)) >= 1 ? true : undefined));
    expect(await t.db('identity.events').where({ org_id: a.orgId, message_id: returning }).first()).toBeUndefined();

    // A replay afterwards reads the person's old events from the log and none of them opens (their keys went with
    // her); the one sent after the erasure, on a device never stitched to her, is left out as suppressed.
    const replayed = await svcctl(['replay']);
    expect(replayed).toMatchObject({ erased: 6, suppressed: 1, skipped: 0 });
    expect(await traces(t.db, a.orgId)).toEqual([]);
    expect(await t.db('identity.events').where({ org_id: a.orgId, message_id: other }).first()).toBeDefined();
    // ...and rebuilds the bystander's projections (a replay folds a merged-away profile made in the same batch into its survivor, so profiles are not compared).
    const rebuilt = await organisationRows(t.db, b.orgId);
    for (const table of ['identity.identity_signals', 'identity.events', 'identity.click_ids', 'identity.fingerprints', 'conversions.queue', 'consent.records']) {
      expect([table, rebuilt[table]?.length]).toEqual([table, bystander[table]?.length]);
    }
    expect(await traces(t.db, b.orgId)).not.toEqual([]);

    // Asking again: 409 naming the erasure, by the identifier or by the erased profile's id; and its status by the profile id.
    for (const [route, body] of [['/v1-profiles/erase', { email: 'ann@example.com' }], [`/v1-profiles/${tombstone!.value.profileId}/erase`, {}]] as const) {
      expect(await json(await call('POST', route, a.keys.admin, body))).toEqual({ status: 409, body: { success: false, error: Messages.erasureAlreadyRequested, erasure_id: erasureId } });
    }
    expect((await json(await call('GET', `/v1-profiles/${tombstone!.value.profileId}/erase`, a.keys.admin))).body).toMatchObject({ erasure: { id: erasureId, status: 'done' } });
    // Another organisation cannot see it.
    expect(await json(await call('GET', `/v1-profiles/${erasureId}/erase`, b.keys.admin))).toEqual({ status: 404, body: { success: false, error: Messages.erasureNotFound } });

    // The person comes back and consents again: the operator lifts the suppression of their userId.
    expect(await svcctl(['unsuppress', '--org', a.orgId, '--user-id', ANN.userId, '--reason', 'consented again'])).toMatchObject({ identifier_type: 'user_id', lifted: true });
    const [back] = await send(a, [{ type: 'identify', anonymousId: 'anon-ann-d4', userId: ANN.userId }]);
    await stored(a, [back!]);
    // ...or every identifier the erasure suppressed at once.
    const lifted = await svcctl(['unsuppress', '--org', a.orgId, '--erasure', erasureId]);
    expect((lifted.lifted as Array<{ type: string }>).map((l) => l.type)).toEqual(['anonymous_id', 'anonymous_id', 'email', 'phone']);
    // Erased stays erased, whatever the suppression list says now: a replay with every suppression lifted brings back
    // nothing from before the erasure (her old events do not open), nor the event sent while she was suppressed
    // (unsuppress lets in what arrives after it); only what she sent once back is there.
    expect(await svcctl(['replay'])).toMatchObject({ erased: 6, suppressed: 1, skipped: 0 });
    expect((await traces(t.db, a.orgId)).filter((found) => !found.endsWith(`: ${ANN.userId}`))).toEqual([]);
    expect(await t.db('identity.events').where({ org_id: a.orgId, message_id: back }).first()).toBeDefined();
    expect(await t.db('identity.events').where({ org_id: a.orgId, message_id: returning }).first()).toBeUndefined();
    expect(await inClear()).toEqual([]);
    // The CLI's refusals: a repeated erasure, no person named.
    for (const [args, message] of [
      [['erase', '--org', a.orgId, '--email', 'ann@example.com'], `Erasure already requested for this profile: ${erasureId}`],
      [['erase', '--org', a.orgId], 'give exactly one of --profile, --user-id, --email, --phone, --anonymous-id'],
      [['erase', '--org', a.orgId, '--profile', 'prf_nobody'], Messages.profileNotFound],
    ] as const) {
      const run = await runNode(SVCCTL, args, { DATABASE_URL: t.url, DATA_DIR: dataDir, ...busEnv });
      expect([run.code, run.stdout, JSON.parse(run.stderr).error]).toEqual([1, '', message]);
    }
    // svcctl on another identifier hash key (a DATA_DIR or IDENTIFIER_HASH_KEYS of another deployment) refuses, rather than find nobody.
    const stranger = await runNode(SVCCTL, ['erase', '--org', a.orgId, '--email', 'ann@example.com'], { DATABASE_URL: t.url, IDENTIFIER_HASH_KEYS: randomBytes(32).toString('hex'), ...busEnv });
    expect([stranger.code, stranger.stdout, JSON.parse(stranger.stderr).error]).toEqual([1, '', expect.stringMatching(/^IDENTIFIER_HASH_KEYS: key 1 \(id [0-9a-f]{16}\) is not the key this database's identifier hashes are made with/)]);

    // The audit trail: every step, and no erased value.
    const audit = await svcctl(['erasure', 'audit', '--org', a.orgId]);
    const entries = audit.entries as Array<{ action: string; actor: string; erasure_id: string | null }>;
    expect(entries.map((e) => e.action)).toEqual(['erasure_requested', 'erasure_done', 'suppressed', 'unsuppressed', 'unsuppressed']);
    expect(entries.every((e) => e.erasure_id === erasureId)).toBe(true);
    expect(entries[1]!.actor).toBe('identity-resolver');
    expect(TRACES.filter((trace) => JSON.stringify(audit).toLowerCase().includes(trace.toLowerCase()))).toEqual([]);
    // Append-only.
    await expect(t.db.raw('delete from privacy.audit_log')).rejects.toThrow(/append-only/);
    // A copy of the database alone does not find her by hashing candidates: every hash of her identifiers is keyed
    // (the key kept in DATA_DIR), none is the plain SHA-256 anyone can compute.
    const privacyCopy = await tablesAsText(t.db, 'privacy');
    const plainHashes = [['email', 'ann@example.com'], ['phone', '+442079460958'], ['user_id', ANN.userId], ...ANN.devices.map((d) => ['anonymous_id', d])].map(([type, value]) =>
      createHash('sha256').update(`${a.orgId}\u0000${type}\u0000${value}`).digest('hex'),
    );
    expect(privacyCopy).toMatch(/k1\.[0-9a-f]{64}/);
    expect(plainHashes.filter((h) => privacyCopy.includes(h))).toEqual([]);
    expect(await svcctl(['hashes', 'status'])).toEqual({ keys: 1, left: { suppressions: 0, erasure_requests: 0, subject_keys: 0, audit_log: 0 } });

    // Through the API: 202 and pending, then done.
    const accepted = await json(await call('POST', '/v1-profiles/erase', a.keys.admin, { anonymous_id: 'anon-someone-else', reason: 'DSR 4412' }));
    expect(accepted).toMatchObject({ status: 202, body: { success: true, erasure: { status: 'pending', requested_by_kind: 'anonymous_id', actor: expect.stringMatching(/^admin-key:/) } } });
    const viaApi = String((accepted.body.erasure as { id: string }).id);
    await until(async () => ((await json(await call('GET', `/v1-profiles/${viaApi}/erase`, a.keys.admin))).body.erasure as { status: string }).status === 'done' ? true : undefined);
    expect(await t.db('identity.events').where({ org_id: a.orgId, message_id: other }).first()).toBeUndefined();
  }, 300_000);

  it.each([
    ['an unknown profile', 'POST', '/v1-profiles/00000000-0000-4000-8000-000000000000/erase', 'admin', {}, 404, Messages.profileNotFound],
    ['an unknown canonical_id', 'POST', '/v1-profiles/prf_nobody/erase', 'admin', {}, 404, Messages.profileNotFound],
    ['an identifier nobody has', 'POST', '/v1-profiles/erase', 'admin', { user_id: 'nobody' }, 404, Messages.profileNotFound],
    ['a read key', 'POST', '/v1-profiles/erase', 'read', { user_id: 'nobody' }, 403, Messages.insufficientPermissions('admin')],
    ['a write key', 'POST', '/v1-profiles/00000000-0000-4000-8000-000000000000/erase', 'write', {}, 403, Messages.insufficientPermissions('admin')],
    ['a read key, status', 'GET', '/v1-profiles/00000000-0000-4000-8000-000000000000/erase', 'read', undefined, 403, Messages.insufficientPermissions('admin')],
    ['no key', 'POST', '/v1-profiles/erase', undefined, { user_id: 'nobody' }, 401, Messages.missingAuthorization],
    ['no identifier', 'POST', '/v1-profiles/erase', 'admin', {}, 400, Messages.erasureIdentifierRequired],
    ['two identifiers', 'POST', '/v1-profiles/erase', 'admin', { user_id: 'u', anonymous_id: 'a' }, 400, Messages.erasureIdentifierRequired],
    ['a bad email', 'POST', '/v1-profiles/erase', 'admin', { email: 'ann' }, 400, Messages.erasureIdentifierInvalid('email')],
    ['an array body', 'POST', '/v1-profiles/erase', 'admin', [], 400, Messages.erasureBodyNotObject],
    ['an invalid JSON body', 'POST', '/v1-profiles/00000000-0000-4000-8000-000000000000/erase', 'admin', '{', 400, Messages.invalidJson],
    ['a bad reason', 'POST', '/v1-profiles/00000000-0000-4000-8000-000000000000/erase', 'admin', { reason: 7 }, 400, Messages.erasureReasonInvalid],
    ['an unknown erasure', 'GET', '/v1-profiles/00000000-0000-4000-8000-000000000000/erase', 'admin', undefined, 404, Messages.erasureNotFound],
    ['GET on the identifier route', 'GET', '/v1-profiles/erase', 'admin', undefined, 404, Messages.notFound],
  ] as const)('%s: %s %s (%s key)', async (_name, method, route, keyType, body, status, message) => {
    const res = await call(method, route, keyType ? a.keys[keyType] : undefined, body);
    expect(await json(res)).toEqual({ status, body: { success: false, error: message } });
  });

  it('refuses a body over 256 KiB with 413, and counts the erasure routes in a bucket of their own (10 per minute)', async () => {
    const big = await json(await call('POST', '/v1-profiles/erase', a.keys.admin, { user_id: 'x', reason: 'r'.repeat(Limits.smallBodyBytes) }));
    expect(big).toMatchObject({ status: 413, body: { limit_bytes: Limits.smallBodyBytes, error: Messages.bodyTooLarge(Limits.smallBodyBytes) } });
    const from = '203.0.113.77';
    // The read bucket of this IP is spent first: the erasure routes do not share it.
    for (let i = 0; i < Limits.rate.profilesReadPerOrgIp; i++) await call('GET', '/v1-profiles', a.keys.admin, undefined, from);
    expect((await call('GET', '/v1-profiles', a.keys.admin, undefined, from)).status).toBe(429);
    for (let i = 0; i < Limits.rate.profilesErasePerOrgIp; i++) expect((await call('POST', '/v1-profiles/erase', a.keys.admin, {}, from)).status).toBe(400);
    expect(await json(await call('POST', '/v1-profiles/erase', a.keys.admin, {}, from))).toEqual({
      status: 429,
      body: { success: false, error: Messages.rateLimitedPerIp(Limits.rate.profilesErasePerOrgIp), code: 'rate_limited' },
    });
  }, 60_000);
}

/** Every row of every table with an org_id, for one organisation (the raw log has none), by table. */
async function organisationRows(db: Db, orgId: string): Promise<Record<string, string[]>> {
  const tables = await db('information_schema.columns')
    .where({ column_name: 'org_id' })
    .whereNotIn('table_schema', ['pg_catalog', 'information_schema', 'rate_limits', 'accounts'])
    .whereNot('table_schema', 'like', 'identity\\_before\\_replay\\_%')
    .select<Array<{ table_schema: string; table_name: string }>>('table_schema', 'table_name');
  const rows: Record<string, string[]> = {};
  for (const { table_schema, table_name } of tables) {
    const { rows: found } = await db.raw<{ rows: Array<{ row: string }> }>(`select to_jsonb(t)::text as row from ??.?? t where t.org_id = ? order by 1`, [table_schema, table_name, orgId]);
    rows[`${table_schema}.${table_name}`] = found.map((r) => r.row);
  }
  return rows;
}

/** The erased person's values found in any table with an org_id (every schema, replay backups included), as `table: value`. */
async function traces(db: Db, orgId: string): Promise<string[]> {
  const tables = await db('information_schema.columns')
    .where({ column_name: 'org_id' })
    .whereNotIn('table_schema', ['pg_catalog', 'information_schema'])
    .select<Array<{ table_schema: string; table_name: string }>>('table_schema', 'table_name');
  const found: string[] = [];
  for (const { table_schema, table_name } of tables) {
    const { rows } = await db.raw<{ rows: Array<{ row: string }> }>(`select lower(to_jsonb(t)::text) as row from ??.?? t where t.org_id = ?`, [table_schema, table_name, orgId]);
    for (const trace of TRACES) if (rows.some((r) => r.row.includes(trace.toLowerCase()))) found.push(`${table_schema}.${table_name}: ${trace}`);
  }
  return found;
}

/** Every row of every table of a schema, as text: what a data-only copy of it holds. */
async function tablesAsText(db: Db, schema: string): Promise<string> {
  const tables = (await db('information_schema.tables').where({ table_schema: schema }).pluck('table_name')) as string[];
  let text = '';
  for (const table of tables) text += (await db.raw<{ rows: Array<{ row: string }> }>(`select to_jsonb(t)::text as row from ??.?? t`, [schema, table])).rows.map((r) => r.row).join('\n');
  return text;
}

async function suppressedCount(root: string): Promise<number> {
  const text = await (await fetch(`${root}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('resolver_events_suppressed_total'));
  return line ? Number(line.trim().split(/\s+/).pop()) : 0;
}

const until = <T>(probe: () => Promise<T | undefined>): Promise<T> => pollForValue(probe, { withinMs: 60_000, everyMs: 200 });

describeWithPostgres('erasure end to end, Postgres-backed log', () => erasureSuite('postgres-log'));
describeWithKafka('erasure end to end, Kafka', () => erasureSuite('kafka'));
