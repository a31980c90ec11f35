/**
 * Segment-compatible ingestion proven with the real client libraries,
 * installed from their registries at pinned versions: Segment's and
 * RudderStack's Node libraries and Segment's Python library, pointed at
 * `{base_url}/segment` of the whole stack (both bus tiers). Each makes
 * track, identify, page, group and alias calls the way server code does
 * (a userId, no anonymousId; alias of an earlier anonymous visitor), and
 * what they produced is read back through the Profiles API. Every response
 * any client got passed through a proxy that checks it against the OpenAPI
 * document the stack serves.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeWithKafka, describeWithPostgres, testLogger } from '@svc/testkit';
import { startFuzzStack, type FuzzStack, type Tier } from './test-support/fuzz/fuzz-stack';
import { startOpenApiProxy, type OpenApiProxy } from './test-support/openapi-proxy';
import { rudderNode, segmentNode, segmentPython, segmentPythonInterpreter, type Call, type Driver } from './test-support/segment-clients/drivers';

type Json = Record<string, unknown>;

function clientSuite(tier: Tier): void {
  let stack: FuzzStack;
  let proxy: OpenApiProxy;
  let python: string;
  beforeAll(async () => {
    [stack, python] = await Promise.all([startFuzzStack(tier, testLogger(`segment-clients-${tier}`)), segmentPythonInterpreter()]);
    proxy = await startOpenApiProxy(stack.port);
  }, 300_000);
  afterAll(async () => {
    await proxy?.close();
    await stack?.stop();
  }, 60_000);

  const drivers: Array<[string, () => Driver]> = [
    ['@segment/analytics-node', () => segmentNode],
    ['@rudderstack/rudder-sdk-node', () => rudderNode],
    ['segment-analytics-python', () => segmentPython(python)],
  ];

  it.each(drivers)('%s: track, identify, page, group and alias land on the user’s profile', async (_name, driver) => {
    const org = stack.targets[0]!;
    const host = `${proxy.origin}/functions/v1/segment`;
    const tag = randomUUID().slice(0, 8);
    const visitor = `anon_${randomUUID()}`;
    const user = `user-${tag}`;
    const email = `${tag}@example.com`;
    const backdated = new Date(Date.now() - 3_600_000).toISOString();

    // A visitor browses anonymously; later, server code knows them only by their user id.
    await driver()(host, org.keys.write, [{ method: 'track', anonymousId: visitor, event: 'Viewed Pricing' }]);
    await waitFor(stack, `select 1 from identity.identity_signals where org_id = ? and signal_type = 'anonymous_id' and signal_value = ?`, [org.orgId, visitor]);
    const calls: Call[] = [
      { method: 'identify', userId: user, traits: { email, plan: 'pro' } },
      { method: 'track', userId: user, event: 'Order Completed', properties: { value: 42, currency: 'EUR' }, timestamp: backdated },
      { method: 'page', userId: user, name: 'Pricing', properties: { path: '/pricing' } },
      { method: 'group', userId: user, groupId: `grp-${tag}`, traits: { name: 'Acme' } },
      { method: 'alias', userId: user, previousId: visitor },
    ];
    await driver()(host, org.keys.write, calls);
    await waitFor(
      stack,
      `select 1 from identity.events e join identity.identity_signals s on s.org_id = e.org_id and s.profile_id = e.profile_id
       where e.org_id = ? and s.signal_type = 'user_id' and s.signal_value = ? having count(distinct e.id) >= 6`,
      [org.orgId, user],
    );

    const read = (path: string) => get(proxy, `/functions/v1/v1-profiles${path}`, org.keys.read);
    const found = await read(`/search?user_id=${encodeURIComponent(user)}`);
    expect(found).toMatchObject({ count: 1 });
    const id = ((found.profiles as Json[])[0] as { id: string }).id;

    const detail = (await read(`/${id}`)).profile as Json;
    expect(detail).toMatchObject({ identified: true, user_id: user });
    expect(detail.identities).toEqual(expect.arrayContaining([expect.objectContaining({ signal_type: 'email', signal_value: email }), expect.objectContaining({ signal_type: 'user_id', signal_value: user })]));

    const events = (await read(`/${id}/events?limit=50`)).events as Array<{ event_name: string; event_timestamp: string; properties: Json }>;
    expect(events.map((e) => e.event_name).sort()).toEqual(['$alias', '$group', '$identify', '$pageview', 'Order Completed', 'Viewed Pricing']);
    // A backdated call keeps its time: the skew correction moves it only by the delay between the library's clock and ours.
    const order = events.find((e) => e.event_name === 'Order Completed')!;
    expect(Math.abs(Date.parse(order.event_timestamp) - Date.parse(backdated))).toBeLessThan(10_000);
    expect(order.properties).toMatchObject({ value: 42, currency: 'EUR' });
    expect(events.find((e) => e.event_name === '$pageview')!.properties).toMatchObject({ name: 'Pricing', path: '/pricing' });

    // The alias merged the anonymous visitor's profile into the user's.
    const signals = ((await read(`/${id}/identities`)).identities as { signals: Array<{ signal_type: string; signal_value: string }> }).signals;
    expect(signals).toEqual(expect.arrayContaining([expect.objectContaining({ signal_type: 'anonymous_id', signal_value: visitor }), expect.objectContaining({ signal_type: 'anonymous_id', signal_value: `user:${user}` })]));
    expect(((await read(`/search?anonymous_id=${encodeURIComponent(visitor)}`)).profiles as Json[]).map((p) => p.id)).toEqual([id]);
  }, 120_000);

  it('a library gives up on a 401 (no retry) and the refusal is the documented one', async () => {
    const before = proxy.exchanges.length;
    await expect(segmentNode(`${proxy.origin}/functions/v1/segment`, `uk_live_${'x'.repeat(40)}`, [{ method: 'track', userId: 'u', event: 'x' }])).rejects.toThrow(/401/);
    expect(proxy.exchanges.slice(before)).toEqual([{ method: 'POST', path: '/functions/v1/segment/v1/batch', status: 401 }]);
  }, 60_000);

  it('every response any client received is the OpenAPI document’s for its route and status', () => {
    const seen = new Set(proxy.exchanges.map((e) => `${e.method} ${e.path.replace(/[0-9a-f-]{36}/, '{id}')} ${e.status}`));
    expect(seen).toEqual(
      new Set([
        'POST /functions/v1/segment/v1/batch 200',
        'POST /functions/v1/segment/v1/batch 401',
        'GET /functions/v1/v1-profiles/search 200',
        'GET /functions/v1/v1-profiles/{id} 200',
        'GET /functions/v1/v1-profiles/{id}/events 200',
        'GET /functions/v1/v1-profiles/{id}/identities 200',
      ]),
    );
    expect(proxy.problems).toEqual([]);
  });
}

async function get(proxy: OpenApiProxy, path: string, key: string): Promise<Json> {
  const res = await fetch(`${proxy.origin}${path}`, { headers: { Authorization: `Bearer ${key}` } });
  const body = (await res.json()) as Json;
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** Polls the database until `sql` returns a row: the resolver has stored what was sent. */
async function waitFor(stack: FuzzStack, sql: string, bindings: unknown[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await stack.db.raw<{ rows: unknown[] }>(sql, bindings as never);
    if (rows.length > 0) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${sql}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describeWithPostgres('real Segment and RudderStack clients on the real stack, Postgres-backed log', () => clientSuite('postgres-log'));
describeWithKafka('real Segment and RudderStack clients on the real stack, Kafka', () => clientSuite('kafka'));
