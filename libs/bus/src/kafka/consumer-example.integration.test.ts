import { randomBytes, randomUUID } from 'node:crypto';
import { Agent } from 'node:https';
import { afterAll, expect, it } from '@jest/globals';
import { describeWithKafka, kafkaEndpoints } from '@svc/testkit';
import { consumeProfileChanges, type ProfileChange, type ProfileChangesConsumer } from '../../../../docs/examples/consume-profile-changes';
import { prefixedTopics } from '../config';
import { createKafkaBus, type KafkaBus } from './bus';

/**
 * The consumer example of docs/consuming-topics.md against the real broker
 * and registry: what the services publish on profiles.changes, it reads and
 * decodes with plain kafkajs and the registry client, in order per profile.
 */
describeWithKafka('the downstream consumer example (docs/examples/consume-profile-changes.ts)', () => {
  let bus: KafkaBus | undefined;
  let consumer: ProfileChangesConsumer | undefined;
  afterAll(async () => {
    await consumer?.stop();
    await bus?.close();
  });

  it('reads and decodes profiles.changes as the services publish it', async () => {
    const endpoints = kafkaEndpoints();
    const topic = prefixedTopics(`example${randomBytes(3).toString('hex')}.`).profilesChanges;
    bus = createKafkaBus(endpoints);
    await bus.ensureTopics([topic]);
    const [orgId, profileId, survivor] = [randomUUID(), randomUUID(), randomUUID()];
    const at = new Date().toISOString();
    const sent: ProfileChange[] = [
      { v: 1, orgId, profileId, change: 'created', at },
      { v: 1, orgId, profileId, change: 'merged', mergedInto: survivor, at },
      { v: 1, orgId, profileId, change: 'unmerged', unmergedFrom: survivor, at },
    ];
    const results = await bus.produce(topic, sent.map((value) => ({ key: value.profileId, value })));
    expect(results.every((r) => r.ok)).toBe(true);

    const got: ProfileChange[] = [];
    const { brokers, ssl, sasl, registryUrl, registryAccess } = endpoints;
    consumer = await consumeProfileChanges({
      kafka: { brokers, ...(ssl ? { ssl } : {}), ...(sasl ? { sasl } : {}) },
      registry: {
        baseURLs: [registryUrl],
        ...(registryAccess
          ? {
              basicAuthCredentials: { credentialsSource: 'USER_INFO' as const, userInfo: `${registryAccess.username}:${registryAccess.password}` },
              createAxiosDefaults: { httpsAgent: new Agent({ ca: registryAccess.ca }) },
            }
          : {}),
      },
      topic: topic.name,
      groupId: `analytics-team-example-${randomBytes(3).toString('hex')}`,
      onChange: async (change) => void got.push(change),
    });
    const until = Date.now() + 30_000;
    while (got.length < sent.length && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    // One key, so one partition: in the order they were published.
    expect(got).toEqual(sent);
  }, 60_000);
});
