import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEAD_LETTER_HEADERS, Topics, deadLetterTopicName, type TopicSpec } from '@svc/contracts';
import { SchemaWriter, type Json } from './json-schema';

/**
 * The AsyncAPI 3 document of the Kafka topics, generated from libs/contracts
 * as the OpenAPI document is: every topic with its key, its value schema and
 * the registry subject that holds it, who writes and who reads it; the
 * dead-letter topics and their headers; the erasure tombstones. Written to
 * libs/openapi/asyncapi.json (`npm run openapi`), validated with the AsyncAPI
 * parser and held equal to the generated one in a test.
 */

type TopicKey = keyof typeof Topics;

interface TopicDoc {
  /** What the message key is: the unit of ordering. */
  key: string;
  /** Who writes it. */
  writer: string;
  /** Who reads it; `internal` topics are the services' own, not for downstream teams. */
  readers: string;
  internal?: boolean;
  description: string;
}

/** What libs/contracts' Topics do not say about each topic. */
const TOPIC_DOCS: Record<TopicKey, TopicDoc> = {
  eventsRaw: {
    key: '`<orgId>:<data key id>`: the visitor’s data key, so one visitor’s events stay in order',
    writer: 'ingest-gateway',
    readers: 'identity-resolver (group `identity-resolver`)',
    internal: true,
    description:
      'Every accepted event, kept forever (a replay rebuilds every projection from it). Sealed per visitor with AES-256-GCM under a data key an erasure deletes (crypto-shredding), so only the resolver reads it.',
  },
  eventsResolved: {
    key: 'the profile id: one profile’s events stay in order',
    writer: 'identity-resolver (its outbox relay)',
    readers: 'downstream teams',
    description: 'Every stored event with the profile it was resolved to and how (`resolutionMethod`).',
  },
  profilesChanges: {
    key: 'the profile id',
    writer: 'identity-resolver (its outbox relay); the Profiles API’s admin merge and unmerge through the same outbox',
    readers: 'downstream teams',
    description:
      'A profile was created, updated, merged away (`mergedInto` names the survivor) or split off again by an unmerge (`unmergedFrom`). A consumer skips a change kind it does not know: kinds are added within v1.',
  },
  conversionsCandidates: {
    key: 'the profile id',
    writer: 'identity-resolver (its outbox relay)',
    readers: 'conversion-forwarder (group `conversion-forwarder`)',
    internal: true,
    description: 'Events whose name qualifies as a conversion under the organisation’s connectors, with the hashed contacts to match them.',
  },
  consentDecisions: {
    key: '`<orgId>:<anonymousId>`: one visitor’s decisions stay in order',
    writer: 'consent-api (its table is its outbox)',
    readers: 'downstream teams',
    description: 'Every consent decision recorded through POST /v1-consent.',
  },
  erasureRequests: {
    key: 'the profile id',
    writer: 'Profiles API and `svcctl erase` (the request table is its outbox)',
    readers: 'identity-resolver (group `identity-resolver-erasure`)',
    internal: true,
    description: 'Erasure requests, carried out by the resolver.',
  },
  profilesErased: {
    key: 'the erased (surviving) profile id',
    writer: 'identity-resolver (its outbox relay)',
    readers: 'downstream teams; consent-api (which redacts the person’s consent decisions) and conversion-forwarder (its queued conversions of the person)',
    description:
      'The tombstone of an erased person: every profile id erased and their identifiers, hashed with the deployment’s keyed hash. A consumer deletes everything it holds of those profiles and identifiers.',
  },
};

/** Headers a consumer sets on a message it parks on `<topic>.dlq`. */
const PARKED_HEADERS: Record<string, string> = {
  [DEAD_LETTER_HEADERS.reason]: 'Why the message was parked: the error, or that it did not match its schema',
  [DEAD_LETTER_HEADERS.source]: 'Where it came from: `<topic>/<partition>/<offset>`',
};

const KAFKA_BINDING_VERSION = '0.5.0';
const PRODUCT_VERSION = (JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
const pascal = (key: string) => `${key[0]!.toUpperCase()}${key.slice(1)}`;

export function buildAsyncApiDocument(): Record<string, Json> {
  const schemas = new SchemaWriter();
  const channels: Record<string, Json> = {};
  const operations: Record<string, Json> = {};
  const messages: Record<string, Json> = {};

  for (const [key, spec] of Object.entries(Topics) as Array<[TopicKey, TopicSpec]>) {
    const doc = TOPIC_DOCS[key];
    const message = pascal(key);
    messages[message] = {
      name: message,
      title: `A message of ${spec.name}`,
      contentType: 'application/json',
      payload: schemas.write(spec.schema),
      bindings: {
        kafka: {
          key: { type: 'string', description: doc.key },
          // Confluent's wire format: a magic byte and the 4-byte schema id before the JSON.
          schemaIdLocation: 'payload',
          schemaIdPayloadEncoding: 'confluent',
          schemaLookupStrategy: 'TopicIdStrategy',
          bindingVersion: KAFKA_BINDING_VERSION,
        },
      },
      'x-registry-subject': `${spec.name}-value`,
    };
    channels[key] = {
      address: spec.name,
      title: spec.name,
      description: `${doc.description}\n\nWritten by ${doc.writer}; read by ${doc.readers}.${doc.internal ? ' Internal: the services’ own topic, not for downstream teams.' : ''} Value schema: registry subject \`${spec.name}-value\`.`,
      messages: { [message]: { $ref: `#/components/messages/${message}` } },
      bindings: {
        kafka: {
          topic: spec.name,
          partitions: spec.partitions,
          // Kept forever where a replay needs it; elsewhere the brokers' retention.
          ...(spec.retainForever ? { topicConfiguration: { 'retention.ms': -1 } } : {}),
          bindingVersion: KAFKA_BINDING_VERSION,
        },
      },
    };
    operations[`receive${message}`] = {
      action: 'receive',
      channel: { $ref: `#/channels/${key}` },
      summary: `Read ${spec.name}`,
      description: `Read by ${doc.readers}. Ordering holds per key (${doc.key}); delivery is at least once, so a consumer de-duplicates (every payload names what it is about).`,
      messages: [{ $ref: `#/channels/${key}/messages/${message}` }],
    };

    const dlq = `${key}DeadLetters`;
    channels[dlq] = {
      address: deadLetterTopicName(spec.name),
      title: deadLetterTopicName(spec.name),
      description: `Messages of ${spec.name} a consumer proved bad and parked, byte for byte as they were, with why and where from in their headers. Inspect with \`svcctl dlq list --topic ${spec.name}\`; put back with \`svcctl dlq redrive\`.`,
      messages: { DeadLetter: { $ref: '#/components/messages/DeadLetter' } },
      bindings: { kafka: { topic: deadLetterTopicName(spec.name), partitions: 1, bindingVersion: KAFKA_BINDING_VERSION } },
    };
  }

  messages.DeadLetter = {
    name: 'DeadLetter',
    title: 'A parked message',
    description: 'The parked message’s bytes as they were on their topic (no schema: they did not pass one), with its key.',
    contentType: 'application/octet-stream',
    headers: {
      type: 'object',
      required: Object.keys(PARKED_HEADERS),
      properties: Object.fromEntries(Object.entries(PARKED_HEADERS).map(([name, description]) => [name, { type: 'string', description }])),
    },
    payload: { type: 'string', format: 'binary' },
  };

  return {
    asyncapi: '3.0.0',
    info: {
      title: 'svc topics',
      version: PRODUCT_VERSION,
      description:
        'The Kafka topics of the event ingestion, identity and profiles service, generated from libs/contracts (libs/openapi asyncapi.ts). Values are JSON in Confluent’s wire format, their schemas registered under `<topic>-value` (TopicNameStrategy). A deployment may prefix every topic name (`TOPIC_PREFIX`). On the embedded tier (`npm start`) the same topics live in PostgreSQL, not Kafka. Consuming them: docs/consuming-topics.md.',
      license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
    },
    defaultContentType: 'application/json',
    servers: {
      kafka: {
        host: '{brokers}',
        protocol: 'kafka',
        description: 'The deployment’s brokers (KAFKA_BROKERS), TLS and SASL as configured',
        variables: { brokers: { default: 'localhost:9092', description: 'host:port of a broker' } },
      },
    },
    channels,
    operations,
    components: { messages, schemas: schemas.componentSchemas() },
  };
}
