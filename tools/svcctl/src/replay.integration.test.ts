import { randomUUID } from 'node:crypto';
import { expect, it } from '@jest/globals';
import { createPostgresLogBus, prefixedTopics } from '@svc/bus';
import type { RawEventEnvelope } from '@svc/contracts';
import { describeWithPostgres, testDatabaseForSuite } from '@svc/testkit';
import { ok } from './test-support/run';

describeWithPostgres('svcctl replay', () => {
  const t = testDatabaseForSuite();

  it('rebuilds the projections from the log the services wrote (here with no resolver running at all)', async () => {
    const prefix = `replay${Date.now()}.`;
    const env = { TOPIC_PREFIX: prefix };
    const orgId = String((await ok(t.url, ['org', 'create', '--name', 'Replayed'], env)).id);
    const topics = prefixedTopics(prefix);
    const bus = createPostgresLogBus({ db: t.db, url: t.url });
    const envelope = (event: Record<string, unknown>): { key: string; value: RawEventEnvelope } => ({
      key: `${orgId}:anon-1`,
      value: {
        v: 1,
        orgId,
        receivedAt: new Date().toISOString(),
        requestId: 'req',
        clientIp: '203.0.113.9',
        event: { messageId: randomUUID(), anonymousId: 'anon-1', timestamp: new Date().toISOString(), context: {}, ...event } as RawEventEnvelope['event'],
      },
    });
    try {
      await bus.produce(topics.eventsRaw, [envelope({ type: 'page' }), envelope({ type: 'identify', userId: 'u-1', traits: { phone: '98765 43210' } })]);
    } finally {
      await bus.close();
    }

    const report = await ok(t.url, ['replay'], env);
    expect(report).toMatchObject({ previous_schema: expect.stringMatching(/^identity_before_replay_\d{14}$/), events: 2, skipped: 0, profiles: 1, admin_merges: 0 });
    const signals = (await t.db('identity.identity_signals').where({ org_id: orgId }).orderBy('signal_type')) as Array<{ signal_type: string; signal_value: string }>;
    // PHONE_DEFAULT_COUNTRY_CODE (91) applied as the resolver applies it.
    expect(signals.map((s) => [s.signal_type, s.signal_value])).toEqual([
      ['anonymous_id', 'anon-1'],
      ['phone', '+919876543210'],
      ['user_id', 'u-1'],
    ]);
  });
});
