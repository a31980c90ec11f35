/**
 * A downstream team's consumer of profiles.changes, with nothing of this
 * repository: kafkajs and Confluent's schema registry client, as
 * docs/consuming-topics.md explains. It reads the topic in its own consumer
 * group, decodes each value with the schema the registry holds for it, skips
 * the change kinds it does not know, and commits once `onChange` resolved
 * (at-least-once: `onChange` must be idempotent). Tested against the real
 * broker and registry (libs/bus/src/kafka/consumer-example.integration.test.ts).
 */
import { JsonDeserializer, SchemaRegistryClient, SerdeType, type ClientConfig } from '@confluentinc/schemaregistry';
import { Kafka, logLevel, type KafkaConfig } from 'kafkajs';

export interface ProfileChange {
  v: 1;
  orgId: string;
  profileId: string;
  change: 'created' | 'updated' | 'merged' | 'unmerged';
  /** merged: the surviving profile. */
  mergedInto?: string;
  /** unmerged: the profile it was split from. */
  unmergedFrom?: string;
  at: string;
}

const KNOWN = new Set(['created', 'updated', 'merged', 'unmerged']);

export interface ProfileChangesConsumer {
  stop(): Promise<void>;
}

export async function consumeProfileChanges(o: {
  /** kafkajs's settings: brokers, and TLS and SASL as the deployment asks. */
  kafka: KafkaConfig;
  /** The registry: its URL, and its login when it has one. */
  registry: ClientConfig;
  /** `profiles.changes`, with the deployment's TOPIC_PREFIX. */
  topic: string;
  /** A group of your own (`<team>-<purpose>`): the services' groups are theirs. */
  groupId: string;
  onChange(change: ProfileChange): Promise<void>;
}): Promise<ProfileChangesConsumer> {
  const deserializer = new JsonDeserializer(new SchemaRegistryClient(o.registry), SerdeType.VALUE, {});
  const consumer = new Kafka({ logLevel: logLevel.NOTHING, ...o.kafka }).consumer({ groupId: o.groupId });
  await consumer.connect();
  await consumer.subscribe({ topics: [o.topic], fromBeginning: true });
  await consumer.run({
    // One message at a time, in order per key (the profile id); its offset is committed once this returns.
    eachMessage: async ({ topic, message }) => {
      if (!message.value) return;
      const change = (await deserializer.deserialize(topic, message.value)) as ProfileChange;
      if (!KNOWN.has(change.change)) return; // a kind added after this code was written
      await o.onChange(change);
    },
  });
  return { stop: () => consumer.disconnect() };
}
