import type { QueryConfig, QueryResult, QueryResultRow } from 'pg';
import type { OutgoingMessage } from '../port';
import { partitionFor } from '../validate';

/**
 * The log's storage operations, as plain SQL over any connection: a pooled
 * one for produce, or a consumer's own session (so a dead-letter append and
 * its offset commit share one transaction on the session that holds the lock).
 */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
  /** With a `name`, a prepared statement: parsed and planned once per session (the hot statements: append, read, commit). */
  query<R extends QueryResultRow = QueryResultRow>(config: QueryConfig<unknown[]>): Promise<QueryResult<R>>;
}

/** NOTIFY channel of appends; the payload is the topic name. */
export const MESSAGES_CHANNEL = 'bus_messages';

/** Creates the topic and its partitions if missing (never shrinks); returns its partition count. */
export async function ensureTopic(q: Queryable, name: string, partitions: number, retainForever = false): Promise<number> {
  const { rows } = await q.query<{ partitions: number }>(
    `insert into bus.topics (name, partitions, retain_forever) values ($1, $2, $3)
     on conflict (name) do update set partitions = greatest(bus.topics.partitions, excluded.partitions),
       retain_forever = bus.topics.retain_forever or excluded.retain_forever
       where bus.topics.partitions < excluded.partitions or (excluded.retain_forever and not bus.topics.retain_forever)
     returning partitions`,
    [name, partitions, retainForever],
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
 * Appends messages, keyed into partitions by Kafka's partitioner, in one
 * statement (one round trip). Must run inside a transaction. Offsets are
 * claimed by bumping each partition's head row, whose row lock the
 * transaction holds until it ends: a concurrent append to the same partition
 * waits, takes the next offsets, and commits after us, so readers see offsets
 * appear strictly in order and never skip one. Heads are locked in ascending
 * partition order (the `order by ... for update`), so producers writing to
 * several partitions at once cannot deadlock; and because the whole append is
 * one statement (the NOTIFY that wakes consumers included), the locks are
 * held for that statement and the commit only, never across a client round
 * trip.
 */
export async function append(
  q: Queryable,
  topic: string,
  partitions: number,
  messages: readonly OutgoingMessage[],
): Promise<void> {
  const counts = new Map<number, number>();
  const rows = messages.map((m) => {
    const partition = partitionFor(m.key, partitions);
    const index = counts.get(partition) ?? 0;
    counts.set(partition, index + 1);
    return { p: partition, i: index, k: m.key, v: m.value ?? null, h: m.headers ?? {} };
  });
  const wanted = [...counts.keys()];
  const { rows: result } = await q.query<{ stored: number }>({
    name: 'svc_bus_append',
    text: `with locked as (
       select partition from bus.partitions
       where topic = $1 and partition = any($2::int[])
       order by partition
       for update
     ), claimed as (
       update bus.partitions h set next_offset = h.next_offset + c.n
       from locked l, unnest($2::int[], $3::int[]) as c (partition, n)
       where h.topic = $1 and h.partition = l.partition and c.partition = l.partition
       returning h.partition, h.next_offset - c.n as first
     ), inserted as (
       insert into bus.messages (topic, partition, "offset", key, value, headers)
       select $1, m.p, c.first + m.i, m.k, m.v, m.h
       from jsonb_to_recordset($4::jsonb) as m (p int, i int, k text, v jsonb, h jsonb)
       join claimed c on c.partition = m.p
       returning 1
     )
     -- The notification is delivered at commit, and only if the transaction commits. Sent by this
     -- statement, so the heads' locks are held for no extra round trip.
     select count(*)::int as stored, pg_notify($5, $1) from inserted`,
    values: [topic, wanted, wanted.map((p) => counts.get(p)), JSON.stringify(rows), MESSAGES_CHANNEL],
  });
  const stored = result[0]?.stored ?? 0;
  if (stored !== messages.length) {
    throw new Error(`topic ${topic} is missing partitions: stored ${stored} of ${messages.length} messages`);
  }
}

export interface StoredMessage {
  topic: string;
  partition: number;
  offset: number;
  key: string;
  value: unknown;
  headers: Record<string, string>;
  createdAt: Date;
  /** The stored value's size (jsonb), for gathering batches. */
  bytes: number;
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
    bytes: number;
  }>({
    name: 'svc_bus_read',
    text: `select p.topic, p.partition, m."offset", m.key, m.value, m.headers, m.created_at, pg_column_size(m.value) as bytes
     from unnest($1::text[], $2::int[], $3::bigint[]) as p (topic, partition, pos)
     cross join lateral (
       select m."offset", m.key, m.value, m.headers, m.created_at from bus.messages m
       where m.topic = p.topic and m.partition = p.partition and m."offset" >= p.pos
       order by m."offset" limit $4
     ) m
     order by p.topic, p.partition, m."offset"`,
    values: [positions.map((p) => p.topic), positions.map((p) => p.partition), positions.map((p) => p.from), limit],
  });
  return rows.map((r) => ({
    topic: r.topic,
    partition: r.partition,
    offset: Number(r.offset),
    key: r.key,
    value: r.value,
    headers: r.headers,
    createdAt: r.created_at,
    bytes: r.bytes,
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
 * holds a huge transaction, except in topics kept forever. Partition heads
 * stay, so offsets are never reused.
 */
export async function deleteOlderThan(q: Queryable, hours: number, chunk = 10_000): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await q.query(
      `delete from bus.messages where ctid = any (array(
         select ctid from bus.messages where created_at < now() - make_interval(secs => $1)
           and topic not in (select name from bus.topics where retain_forever) limit $2))`,
      [hours * 3600, chunk],
    );
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < chunk) return total;
  }
}
