import { RestError, type SchemaRegistryClient } from '@confluentinc/schemaregistry';
import type { Admin, ITopicConfig } from 'kafkajs';
import type { TopicSpec } from '@svc/contracts';
import { isRawTopic, valueSubject } from './codec';

export interface TopicReplication {
  replicationFactor?: number | undefined;
  minInsyncReplicas?: number | undefined;
}

/** What producing to a topic needs to know. */
export interface TopicState {
  /** The topic's partition count on the broker (at least the spec's). */
  partitions: number;
  /** The registry id of the spec's schema under `<topic>-value`; none for raw (dead-letter) topics. */
  schemaId: number | undefined;
}

interface Entry {
  state: Promise<TopicState>;
  partitionsWanted: number;
  schemaJson: string;
  registered: boolean;
  loadedAt: number;
  /** `state` has resolved: a stale entry can keep answering while it is re-read. */
  loaded: boolean;
  /** The re-read under way, if any. */
  refreshing?: Promise<void>;
}

/**
 * Creates topics (and grows them, never shrinks) and registers their schemas,
 * once per topic per process, re-reading the partition count now and then so
 * a topic grown elsewhere is partitioned like Kafka's own partitioner would.
 * The periodic re-read happens behind the callers' backs: until it is done
 * they get the last state read, instead of all waiting for the admin and
 * registry round trips (which showed in the produce latency's tail).
 */
export class TopicManager {
  private readonly known = new Map<string, Entry>();
  /** A schema's JSON, made once per schema object: ensure() runs on every produce call. */
  private readonly schemaJsonOf = new WeakMap<object, string>();

  constructor(
    private readonly admin: () => Promise<Admin>,
    private readonly registry: SchemaRegistryClient,
    private readonly refreshMs = 30_000,
    /** How topics this process creates are replicated; unset parts take the broker's defaults. */
    private readonly replication: TopicReplication = {},
  ) {}

  /**
   * The topic's state, creating or growing it first. `register` (for writers)
   * also registers the spec's schema; readers only read what writers registered.
   */
  ensure(spec: TopicSpec, register: boolean): Promise<TopicState> {
    let schemaJson = this.schemaJsonOf.get(spec.schema);
    if (schemaJson === undefined) {
      schemaJson = JSON.stringify(spec.schema);
      this.schemaJsonOf.set(spec.schema, schemaJson);
    }
    const entry = this.known.get(spec.name);
    const fresh = entry && Date.now() - entry.loadedAt < this.refreshMs;
    const enough = entry && entry.partitionsWanted >= spec.partitions && entry.schemaJson === schemaJson && (entry.registered || !register);
    if (entry && enough) {
      if (fresh) return entry.state;
      if (entry.loaded) {
        this.refreshBehind(spec, entry);
        return entry.state;
      }
    }
    // A topic we saw before exists: a refresh needs only its metadata, not the whole topic list.
    const state = this.load(spec, schemaJson, register, entry !== undefined);
    const next: Entry = { state, partitionsWanted: spec.partitions, schemaJson, registered: register, loadedAt: Date.now(), loaded: false };
    this.known.set(spec.name, next);
    state.then(
      () => {
        next.loaded = true;
      },
      () => {
        if (this.known.get(spec.name) === next) this.known.delete(spec.name);
      },
    );
    return state;
  }

  /** Re-reads a stale entry once at a time; a failed re-read keeps the last state, and the next call tries again. */
  private refreshBehind(spec: TopicSpec, entry: Entry): void {
    if (entry.refreshing) return;
    entry.refreshing = this.load(spec, entry.schemaJson, entry.registered, true).then(
      (state) => {
        if (this.known.get(spec.name) !== entry) return;
        this.known.set(spec.name, { ...entry, state: Promise.resolve(state), loadedAt: Date.now(), loaded: true, refreshing: undefined });
      },
      () => {
        entry.refreshing = undefined;
      },
    );
  }

  private async load(spec: TopicSpec, schemaJson: string, register: boolean, existed: boolean): Promise<TopicState> {
    const admin = await this.admin();
    let partitions = await partitionCount(admin, spec.name, !existed);
    if (partitions === undefined) {
      // Someone else may have created it first; either way it exists now.
      const { replicationFactor, minInsyncReplicas } = this.replication;
      await createTopic(admin, {
        topic: spec.name,
        numPartitions: spec.partitions,
        ...(replicationFactor === undefined ? {} : { replicationFactor }),
        // The port's IncomingMessage.timestamp is when the log stored the message, not the producer's clock.
        configEntries: [
          { name: 'message.timestamp.type', value: 'LogAppendTime' },
          ...(spec.retainForever ? [{ name: 'retention.ms', value: '-1' }] : []),
          ...(minInsyncReplicas === undefined ? [] : [{ name: 'min.insync.replicas', value: String(minInsyncReplicas) }]),
        ],
      });
      partitions = (await partitionCount(admin, spec.name)) ?? spec.partitions;
    }
    if (partitions < spec.partitions) {
      try {
        await admin.createPartitions({ topicPartitions: [{ topic: spec.name, count: spec.partitions }] });
      } catch (err) {
        // INVALID_PARTITIONS: another process grew it meanwhile; the re-read below tells.
        if ((err as { type?: unknown }).type !== 'INVALID_PARTITIONS') throw err;
      }
      partitions = (await partitionCount(admin, spec.name)) ?? spec.partitions;
    }
    const schemaId = register && !isRawTopic(spec.name) ? await this.register(spec.name, schemaJson) : undefined;
    return { partitions, schemaId };
  }

  private async register(topic: string, schema: string): Promise<number> {
    try {
      return await this.registry.register(valueSubject(topic), { schemaType: 'JSON', schema });
    } catch (err) {
      if (err instanceof RestError && err.status === 409) {
        throw new Error(
          `bus: the schema of topic ${topic} is incompatible with what subject ${valueSubject(topic)} has registered ` +
            `(the registry's compatibility rule refused it); publish it as a new topic version instead`,
          { cause: err },
        );
      }
      throw err;
    }
  }
}

/** What a broker answers about a partition it has not taken up yet (a topic created or grown moments ago). */
const NOT_SERVED_YET = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE', 'NOT_LEADER_FOR_PARTITION', 'NOT_LEADER_OR_FOLLOWER']);
const SERVED_WITHIN_MS = 15_000;

function notServedYet(err: unknown): boolean {
  // kafkajs's retrier may wrap the broker's error.
  for (let e = err as { type?: unknown; originalError?: unknown; cause?: unknown } | undefined; e; e = (e.originalError ?? e.cause) as typeof e) {
    if (typeof e.type === 'string' && NOT_SERVED_YET.has(e.type)) return true;
  }
  return false;
}

/**
 * Runs `attempt` until it succeeds; while it fails because the broker has
 * not taken up a partition yet (KRaft brokers take up a new one a little
 * after the controller has it), again after a back-off, for 15 s at most.
 * Any other failure, or the last, is thrown.
 */
export async function whenServed<T>(attempt: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + SERVED_WITHIN_MS;
  for (let waitMs = 100; ; waitMs = Math.min(waitMs * 2, 1_000)) {
    try {
      return await attempt();
    } catch (err) {
      if (!notServedYet(err) || Date.now() + waitMs > deadline) throw err;
    }
    await new Promise((r) => setTimeout(r, waitMs));
  }
}

/**
 * Creates the topic and leaves waiting for its leaders to partitionCount.
 * kafkajs's own wait (waitForLeaders) tolerates only LEADER_NOT_AVAILABLE;
 * when another process has created the same topic a moment before, the
 * broker answers UNKNOWN_TOPIC_OR_PARTITION for a while, and that failed the
 * start of whichever service came second.
 */
async function createTopic(admin: Admin, topic: ITopicConfig): Promise<void> {
  try {
    await admin.createTopics({ topics: [topic], waitForLeaders: true });
  } catch (err) {
    if (notServedYet(err)) return;
    const refused = refusedReplication(err);
    if (refused) {
      throw new Error(`bus: cannot create topic ${topic.topic}: ${refused} (KAFKA_REPLICATION_FACTOR and KAFKA_MIN_INSYNC_REPLICAS must fit the cluster: 1 and 1 for a single broker)`, { cause: err });
    }
    throw err;
  }
}

/** The broker's own words when a topic's replication does not fit the cluster (kafkajs puts them in the error's `errors`). */
function refusedReplication(err: unknown, depth = 0): string | undefined {
  if (typeof err !== 'object' || err === null || depth > 3) return undefined;
  const { type, message, errors, originalError, cause } = err as Record<string, unknown>;
  if (type === 'INVALID_REPLICATION_FACTOR' || type === 'INVALID_CONFIG' || type === 'POLICY_VIOLATION') return String(message);
  for (const e of [...(Array.isArray(errors) ? (errors as unknown[]) : []), originalError, cause]) {
    const found = refusedReplication(e, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** The topic's partition count once every partition has a leader (bounded wait); undefined when it does not exist. */
async function partitionCount(admin: Admin, topic: string, mayBeMissing = true): Promise<number | undefined> {
  // Asking for the metadata of a missing topic is an error kafkajs retries; the list says it at once.
  if (mayBeMissing && !(await admin.listTopics()).includes(topic)) return undefined;
  return whenServed(async () => {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const partitions = topics.find((t) => t.name === topic)?.partitions ?? [];
    if (partitions.length > 0 && partitions.every((p) => p.leader >= 0)) return partitions.length;
    // Said as the broker says it of a partition it has not taken up, so it is waited for alike.
    throw Object.assign(new Error(`bus: topic ${topic} has partitions without a leader after ${SERVED_WITHIN_MS / 1000} s`), { type: 'LEADER_NOT_AVAILABLE' });
  });
}
