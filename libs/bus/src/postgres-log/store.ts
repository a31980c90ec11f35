import type { QueryResult, QueryResultRow } from 'pg';
import type { OutgoingMessage } from '../port';
import { partitionFor } from '../validate';

/**
 * The log's storage operations, as plain SQL over any connection: a pooled
 * one for produce, or a consumer's own session (so a dead-letter append and
 * its offset commit share one transaction on the session that holds the lock).
 */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}

/** NOTIFY channel of appends; the payload is the topic name. */
export const MESSAGES_CHANNEL = 'bus_messages';

/** Creates the topic and its partitions if missing (never shrinks); returns its partition count. */
export async function ensureTopic(q: Queryable, name: string, partitions: number): Promise<number> {
  const { rows } = await q.query<{ partitions: number }>(
    `insert into bus.topics (name, partitions) values ($1, $2)
     on conflict (name) do update set partitions = greatest(bus.topics.partitions, excluded.partitions)
       where bus.topics.partitions < excluded.partitions
     returning partitions`,
    [name, partitions],
  );
  // No row back: the topic existed with at least as many partitions.
  const count = rows[0]?.partitions ?? (await topicPartitions(q, name));
  if (count === undefined) throw new Error(`topic ${name} vanished while being created`);
  // Unconditional, so a topic row whose heads were never written heals itself.
  await q.query(
    `insert into bus.partitions (topic, partition) select $1, p from generate_series(0, $2::int - 1) p
     on conflict do nothing`,
    [name, count],
  );
  return count;
}

export async function topicPartitions(q: Queryable, name: string): Promise<number | undefined> {
  const { rows } = await q.query<{ partitions: number }>('select partitions from bus.topics where name = $1', [name]);
  return rows[0]?.partitions;
}

/**
 * Appends messages, keyed into partitions by Kafka's partitioner. Must run
 * inside a transaction. Offsets are claimed by bumping the partition's head
 * row, whose row lock the transaction holds until it ends: a concurrent
 * append to the same partition waits, takes the next offsets, and commits
 * after us, so readers see offsets appear strictly in order and never skip
 * one. Heads are locked in ascending partition order, so producers writing
 * to several partitions at once cannot deadlock.
 */
export async function append(
  q: Queryable,
  topic: string,
  partitions: number,
  messages: readonly OutgoingMessage[],
): Promise<void> {
  const byPartition = new Map<number, OutgoingMessage[]>();
  for (const m of messages) {
    const p = partitionFor(m.key, partitions);
    byPartition.set(p, [...(byPartition.get(p) ?? []), m]);
  }
  for (const [partition, batch] of [...byPartition].sort(([a], [b]) => a - b)) {
    const { rows } = await q.query<{ next_offset: string | number }>(
      `update bus.partitions set next_offset = next_offset + $3
       where topic = $1 and partition = $2 returning next_offset`,
      [topic, partition, batch.length],
    );
    if (!rows[0]) throw new Error(`topic ${topic} has no partition ${partition}`);
    const first = Number(rows[0].next_offset) - batch.length;
    const payload = batch.map((m) => ({ key: m.key, value: m.value ?? null, headers: m.headers ?? {} }));
    await q.query(
      `insert into bus.messages (topic, partition, "offset", key, value, headers)
       select $1, $2, $3::bigint + t.i - 1, t.m ->> 'key', t.m -> 'value', t.m -> 'headers'
       from jsonb_array_elements($4::jsonb) with ordinality as t (m, i)`,
      [topic, partition, first, JSON.stringify(payload)],
    );
  }
  // Delivered at commit, and only if the transaction commits.
  await q.query('select pg_notify($1, $2)', [MESSAGES_CHANNEL, topic]);
}

export interface StoredMessage {
  topic: string;
  partition: number;
  offset: number;
  key: string;
  value: unknown;
  headers: Record<string, string>;
  createdAt: Date;
}

export interface ReadPosition {
  topic: string;
  partition: number;
  /** First offset wanted. */
  from: number;
}

/** Up to `limit` messages of each position's partition from `from` on, ordered by (topic, partition, offset). */
export async function read(q: Queryable, positions: readonly ReadPosition[], limit: number): Promise<StoredMessage[]> {
  if (positions.length === 0) return [];
  const { rows } = await q.query<{
    topic: string;
    partition: number;
    offset: string | number;
    key: string;
    value: unknown;
    headers: Record<string, string>;
    created_at: Date;
  }>(
    `select p.topic, p.partition, m."offset", m.key, m.value, m.headers, m.created_at
     from unnest($1::text[], $2::int[], $3::bigint[]) as p (topic, partition, pos)
     cross join lateral (
       select * from bus.messages m
       where m.topic = p.topic and m.partition = p.partition and m."offset" >= p.pos
       order by m."offset" limit $4
     ) m
     order by p.topic, p.partition, m."offset"`,
    [positions.map((p) => p.topic), positions.map((p) => p.partition), positions.map((p) => p.from), limit],
  );
  return rows.map((r) => ({
    topic: r.topic,
    partition: r.partition,
    offset: Number(r.offset),
    key: r.key,
    value: r.value,
    headers: r.headers,
    createdAt: r.created_at,
  }));
}

/** The next offset a partition will get, i.e. its end. */
export async function partitionEnd(q: Queryable, topic: string, partition: number): Promise<number> {
  const { rows } = await q.query<{ next_offset: string | number }>(
    'select next_offset from bus.partitions where topic = $1 and partition = $2',
    [topic, partition],
  );
  return Number(rows[0]?.next_offset ?? 0);
}

/**
 * Deletes messages older than the retention, in chunks so one sweep never
 * holds a huge transaction. Partition heads stay, so offsets are never reused.
 */
export async function deleteOlderThan(q: Queryable, hours: number, chunk = 10_000): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await q.query(
      `delete from bus.messages where ctid = any (array(
         select ctid from bus.messages where created_at < now() - make_interval(secs => $1) limit $2))`,
      [hours * 3600, chunk],
    );
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < chunk) return total;
  }
}
