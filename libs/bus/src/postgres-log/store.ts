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
 * A stored record: [key, value] or [key, value, headers] (headers only when
 * there are any). A partition's records are kept in record batches, as
 * Kafka keeps them: one row of bus.batches per partition per append, its
 * records a JSON array of these, at offsets base_offset, base_offset + 1, ...
 * A row per batch rather than per message is what makes an append cheap for
 * the database (one heap row, one index entry and no JSON parsing for a
 * hundred messages); what a consumer reads is unchanged, message by message.
 */
type StoredRecord = [key: string, value: unknown, headers?: Record<string, string>];

/**
 * Appends messages, keyed into partitions by Kafka's partitioner, in one
 * statement (one round trip): one record batch per partition written.
 * Must run inside a transaction. Offsets are claimed by bumping each
 * partition's head row, whose row lock the transaction holds until it ends:
 * a concurrent append to the same partition waits, takes the next offsets,
 * and commits after us, so readers see offsets appear strictly in order and
 * never skip one. Heads are locked in ascending partition order (the
 * `order by ... for update`), so producers writing to several partitions at
 * once cannot deadlock; and because the whole append is one statement (the
 * NOTIFY that wakes consumers included), the locks are held for that
 * statement and the commit only, never across a client round trip.
 */
export async function append(
  q: Queryable,
  topic: string,
  partitions: number,
  messages: readonly OutgoingMessage[],
): Promise<void> {
  const batches = new Map<number, StoredRecord[]>();
  for (const m of messages) {
    const partition = partitionFor(m.key, partitions);
    const record: StoredRecord = m.headers && Object.keys(m.headers).length > 0 ? [m.key, m.value ?? null, m.headers] : [m.key, m.value ?? null];
    const batch = batches.get(partition);
    if (batch) batch.push(record);
    else batches.set(partition, [record]);
  }
  const wanted = [...batches.keys()];
  // Every batch's JSON in one binary parameter, each at its byte range: sent as it is. As a text[]
  // parameter the driver would escape every quote of every record, and the database unescape it.
  const pieces = wanted.map((p) => Buffer.from(JSON.stringify(batches.get(p))));
  const starts: number[] = [];
  let at = 1;
  for (const piece of pieces) {
    starts.push(at);
    at += piece.length;
  }
  const { rows: result } = await q.query<{ stored: number }>({
    name: 'svc_bus_append_batches',
    text: `with locked as (
       select partition from bus.partitions
       where topic = $1 and partition = any($2::int[])
       order by partition
       for update
     ), claimed as (
       update bus.partitions h set next_offset = h.next_offset + c.n
       from locked l, unnest($2::int[], $3::int[], $4::int[], $5::int[]) as c (partition, n, start, bytes)
       where h.topic = $1 and h.partition = l.partition and c.partition = l.partition
       returning h.partition, h.next_offset - c.n as first, c.n, c.start, c.bytes
     ), inserted as (
       insert into bus.batches (topic, partition, base_offset, last_offset, records)
       select $1, partition, first, first + n - 1, convert_from(substring($6::bytea from start for bytes), 'UTF8') from claimed
       returning 1
     )
     -- The notification is delivered at commit, and only if the transaction commits. Sent by this
     -- statement, so the heads' locks are held for no extra round trip.
     select count(*)::int as stored, pg_notify($7, $1) from inserted`,
    values: [topic, wanted, wanted.map((p) => batches.get(p)!.length), starts, pieces.map((piece) => piece.length), Buffer.concat(pieces), MESSAGES_CHANNEL],
  });
  const stored = result[0]?.stored ?? 0;
  if (stored !== wanted.length) {
    throw new Error(`topic ${topic} is missing partitions: stored ${stored} of ${wanted.length} partitions' batches`);
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
  /** The stored message's size (its batch's share), for gathering batches. */
  bytes: number;
}

export interface ReadPosition {
  topic: string;
  partition: number;
  /** First offset wanted. */
  from: number;
}

/**
 * Up to `limit` messages of each position's partition from `from` on,
 * ordered by (topic, partition, offset). Reads the batch holding `from`
 * (the last one starting at or before it) and those after it that start
 * within the limit: two index range scans per partition.
 */
export async function read(q: Queryable, positions: readonly ReadPosition[], limit: number): Promise<StoredMessage[]> {
  if (positions.length === 0) return [];
  const { rows } = await q.query<{
    topic: string;
    partition: number;
    from: string | number;
    base_offset: string | number;
    records: string;
    created_at: Date;
  }>({
    name: 'svc_bus_read_batches',
    text: `select p.topic, p.partition, p.pos as from, b.base_offset, b.records, b.created_at
     from unnest($1::text[], $2::int[], $3::bigint[]) as p (topic, partition, pos)
     cross join lateral (
       select b.base_offset, b.records, b.created_at from bus.batches b
       where b.topic = p.topic and b.partition = p.partition and b.last_offset >= p.pos and b.base_offset < p.pos + $4
         and b.base_offset >= coalesce((
           select max(x.base_offset) from bus.batches x where x.topic = p.topic and x.partition = p.partition and x.base_offset <= p.pos), 0)
       order by b.base_offset
     ) b
     order by p.topic, p.partition, b.base_offset`,
    values: [positions.map((p) => p.topic), positions.map((p) => p.partition), positions.map((p) => p.from), limit],
  });
  const out: StoredMessage[] = [];
  let partition = '';
  let taken = 0;
  for (const r of rows) {
    const here = `${r.topic}\n${r.partition}`;
    if (here !== partition) {
      partition = here;
      taken = 0;
    }
    const records = JSON.parse(r.records) as StoredRecord[];
    const base = Number(r.base_offset);
    const bytes = Math.ceil(r.records.length / records.length);
    for (let i = Math.max(0, Number(r.from) - base); i < records.length && taken < limit; i++, taken++) {
      const [key, value, headers] = records[i]!;
      out.push({ topic: r.topic, partition: r.partition, offset: base + i, key, value, headers: headers ?? {}, createdAt: r.created_at, bytes });
    }
  }
  return out;
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
 * Deletes record batches older than the retention, in chunks so one sweep
 * never holds a huge transaction, except in topics kept forever; returns
 * how many messages went. Partition heads stay, so offsets are never reused.
 */
export async function deleteOlderThan(q: Queryable, hours: number, chunk = 1_000): Promise<number> {
  let total = 0;
  for (;;) {
    const { rows } = await q.query<{ batches: number; messages: string | null }>(
      `with gone as (
         delete from bus.batches where ctid = any (array(
           select ctid from bus.batches where created_at < now() - make_interval(secs => $1)
             and topic not in (select name from bus.topics where retain_forever) limit $2))
         returning last_offset - base_offset + 1 as n)
       select count(*)::int as batches, sum(n) as messages from gone`,
      [hours * 3600, chunk],
    );
    const { batches, messages } = rows[0] ?? { batches: 0, messages: null };
    total += Number(messages ?? 0);
    if (batches < chunk) return total;
  }
}
