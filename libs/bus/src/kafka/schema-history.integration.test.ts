import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import path from 'node:path';
import { afterAll, expect, it } from '@jest/globals';
import { SchemaRegistryClient } from '@confluentinc/schemaregistry';
import { describeWithKafka, kafkaEndpoints } from '@svc/testkit';
import { prefixedTopics } from '../config';
import { createKafkaBus, type KafkaBus } from './bus';
import { valueSubject } from './codec';

/**
 * A deployment upgraded in place: its registry holds the schemas a topic had
 * in earlier releases (schema-history/<topic>.<n>.json, as they were
 * registered), and the new release registers the current one over them
 * under the registry's default rule (BACKWARD). A change the rule refuses
 * would stop every producer of the topic at start-up.
 */
const HISTORY: Array<[keyof ReturnType<typeof prefixedTopics>, string[], number]> = [
  // Topic, its earlier schemas as registered, and the subject's versions once the current one is registered.
  ['eventsRaw', ['events.raw.1.json'], 2],
  // Unchanged since (the same text, so the registry keeps its version): the registry refuses any change
  // inside the tombstone's identifiers, as its comparison of their anyOf of type literals fails even when
  // they are unchanged. Keyed identifier hashes went on the tombstone as 64 hex digits for that reason.
  ['profilesErased', ['profiles.erased.1.json'], 1],
  // The `unmerged` change (and its unmergedFrom) came in a second version: an added case of the anyOf.
  ['profilesChanges', ['profiles.changes.1.json'], 2],
];

describeWithKafka('topic schemas over their earlier versions in the schema registry', () => {
  const buses: KafkaBus[] = [];
  afterAll(async () => {
    for (const b of buses) await b.close();
  });

  it.each(HISTORY)('%s: the current schema registers over every earlier one', async (topicKey, files, versions) => {
    const topic = prefixedTopics(`hist${randomBytes(3).toString('hex')}.`)[topicKey];
    const { registryUrl, registryAccess } = kafkaEndpoints();
    const registry = new SchemaRegistryClient({
      baseURLs: [registryUrl],
      ...(registryAccess
        ? {
            basicAuthCredentials: { credentialsSource: 'USER_INFO' as const, userInfo: `${registryAccess.username}:${registryAccess.password}` },
            createAxiosDefaults: { httpsAgent: new Agent({ ca: registryAccess.ca }) },
          }
        : {}),
    });
    for (const file of files) {
      await registry.register(valueSubject(topic.name), { schemaType: 'JSON', schema: readFileSync(path.join(__dirname, 'schema-history', file), 'utf8') });
    }
    const bus = createKafkaBus(kafkaEndpoints());
    buses.push(bus);
    await bus.ensureTopics([topic]);
    expect((await registry.getLatestSchemaMetadata(valueSubject(topic.name))).version).toBe(versions);
  });
});
