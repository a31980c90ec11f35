import { mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { freePort } from '@svc/runtime';
import { infraScript } from '@svc/testkit';

/**
 * The three-broker KRaft cluster of infra/local/kafka-cluster.sh (nodes 1, 2
 * and 3 on 127.0.0.1), driven the way libs/testkit's local-infra.ts drives
 * kafka.sh: each command a bounded run of the script.
 */
const run = (args: string[], timeoutMs: number): Promise<string> => infraScript('kafka-cluster.sh', args, timeoutMs);

export type Node = 1 | 2 | 3;
export const NODES: readonly Node[] = [1, 2, 3];

export interface Cluster {
  /** `host:port` of nodes 1, 2 and 3, in that order. */
  brokers: string[];
  workdir: string;
  /** SIGKILL, data kept; resolves once the JVM is gone. */
  kill(node: Node): Promise<void>;
  /** SIGTERM (controlled shutdown), SIGKILL after a bound. */
  stopNode(node: Node): Promise<void>;
  /** Starts the node again; resolves once it answers Metadata. */
  restart(node: Node): Promise<void>;
  /** The node leading most partitions of `topic`. */
  leader(topic: string): Promise<Node>;
  /** The nodes whose JVM is running. */
  running(): Promise<Node[]>;
  /**
   * Waits until every partition of `topics` has a leader and all three
   * replicas in sync (a rolling restart must not take the next node down
   * before the last one has caught up); throws after `withinMs`.
   */
  waitInSync(topics: readonly string[], withinMs: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startCluster(): Promise<Cluster> {
  const workdir = path.join(os.tmpdir(), `svc-reliability-kafka-${process.pid}`);
  await rm(workdir, { recursive: true, force: true });
  await mkdir(workdir, { recursive: true });
  const ports = [await freePort(), await freePort(), await freePort()];
  let out: string;
  try {
    out = await run(['start', workdir, ...ports.map(String)], 240_000);
  } catch (err) {
    await run(['stop', workdir], 60_000).catch(() => undefined);
    throw err;
  }
  const last = out.trim().split('\n').pop() ?? '';
  if (!last.startsWith('KAFKA_BROKERS=')) throw new Error(`kafka-cluster.sh start printed ${last}`);
  const brokers = last.slice('KAFKA_BROKERS='.length).split(',');
  return {
    brokers,
    workdir,
    kill: async (node) => void (await run(['kill', workdir, String(node)], 30_000)),
    stopNode: async (node) => void (await run(['stop-node', workdir, String(node)], 60_000)),
    restart: async (node) => void (await run(['restart', workdir, String(node)], 150_000)),
    leader: async (topic) => Number((await run(['leader', workdir, topic], 15_000)).trim()) as Node,
    running: async () =>
      (await run(['pids', workdir], 15_000))
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => Number(line.split(' ')[0]) as Node),
    waitInSync: (topics, withinMs) => waitInSync(brokers, topics, withinMs),
    async stop() {
      await run(['stop', workdir], 90_000);
      await rm(workdir, { recursive: true, force: true });
    },
  };
}

async function waitInSync(brokers: readonly string[], topics: readonly string[], withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    // A fresh client per look: a client that met a dead broker keeps stale connections.
    const admin = new Kafka({
      clientId: 'reliability-isr',
      brokers: [...brokers],
      connectionTimeout: 1_000,
      requestTimeout: 3_000,
      retry: { retries: 0 },
      logLevel: logLevel.NOTHING,
    }).admin();
    try {
      await admin.connect();
      const { topics: meta } = await admin.fetchTopicMetadata({ topics: [...topics] });
      const short = meta.flatMap((t) =>
        t.partitions.filter((p) => p.leader < 0 || p.isr.length < 3).map((p) => `${t.name}/${p.partitionId} isr=[${p.isr.join(',')}]`),
      );
      if (short.length === 0) return;
      last = `${short.length} partitions short: ${short.slice(0, 4).join('; ')}`;
    } catch (err) {
      last = (err as Error).message;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`replicas not in sync within ${withinMs / 1000} s: ${last}`);
}
