import type { ConnectionOptions } from 'node:tls';
import type { Registry } from 'prom-client';
import type { BusLogger } from '../shared';

export interface KafkaBusOptions {
  /** Bootstrap servers, `host:port`. */
  brokers: readonly string[];
  /** Confluent-compatible schema registry base URL. */
  registryUrl: string;
  /** TLS to the brokers (a CA, a client certificate); absent: plaintext. */
  ssl?: ConnectionOptions;
  /** A SASL login, over `ssl` when that is set. */
  sasl?: KafkaSasl;
  /** An https registry's CA, and its HTTP basic-auth login. */
  registryAccess?: RegistryAccess;
  /** Replicas of each topic this bus creates (default: the broker's default.replication.factor). */
  replicationFactor?: number;
  /** min.insync.replicas of each topic this bus creates (default: the broker's). */
  minInsyncReplicas?: number;
  /** Names this process to the brokers (default `svc-bus`). */
  clientId?: string;
  logger?: BusLogger;
  /** Where `bus_consumer_lag{group,topic,partition}` is exported; none without it. */
  metricsRegistry?: Registry;
  /** Producer compression (default `none`: measured faster than gzip on 2 cores; see bench/). */
  compression?: 'gzip' | 'none';
  /**
   * Idempotent producers sharing the partitions (default 1). kafkajs sends an idempotent
   * producer's requests one at a time per broker; each producer gathers the produce() calls
   * made while its request is in flight into its next, so one producer already sends every
   * partition at once. More producers mean more, smaller requests in flight: measured on
   * 2 cores (gateway bench), 4 cost about 20% more CPU per message than 1 for no more throughput.
   */
  producers?: number;
  /** produce(), ensureTopics() and subscribe() give up with BusUnavailableError after this long (default 8 s). */
  operationTimeoutMs?: number;
  /** One broker request, retried twice before it counts as failed (default 5 s). */
  requestTimeoutMs?: number;
  /** Opening a broker connection (default 2 s). */
  connectionTimeoutMs?: number;
  /** Consumer-group liveness. Tests shrink these so takeovers happen in seconds. */
  consumer?: {
    /** A member silent for this long is dead (default 10 s; the broker's minimum is 6 s). */
    sessionTimeoutMs?: number;
    /** How long a rebalance waits for members to rejoin (default 30 s). */
    rebalanceTimeoutMs?: number;
    /** Heartbeat period, also while a handler runs (default 1 s). */
    heartbeatIntervalMs?: number;
    /** Longest fetch long-poll; bounds how quickly pause/resume/stop take effect (default 500 ms). */
    maxWaitTimeMs?: number;
  };
}

export interface ResolvedConsumerSettings {
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  heartbeatIntervalMs: number;
  maxWaitTimeMs: number;
}

export function consumerSettings(o: KafkaBusOptions): ResolvedConsumerSettings {
  return {
    sessionTimeoutMs: o.consumer?.sessionTimeoutMs ?? 10_000,
    rebalanceTimeoutMs: o.consumer?.rebalanceTimeoutMs ?? 30_000,
    heartbeatIntervalMs: o.consumer?.heartbeatIntervalMs ?? 1_000,
    maxWaitTimeMs: o.consumer?.maxWaitTimeMs ?? 500,
  };
}

/** kafkajs's own SASL options for the mechanisms it implements. */
export type KafkaSasl = { username: string; password: string } & (
  | { mechanism: 'plain' }
  | { mechanism: 'scram-sha-256' }
  | { mechanism: 'scram-sha-512' }
);

export interface RegistryAccess {
  /** PEM of the CA to trust for an https registry. */
  ca?: string;
  username?: string;
  password?: string;
}
