import { sqlMigration, type MigrationSet } from '@svc/runtime';

/** The Postgres log: topics, their partitions' heads, messages, consumer groups. */
export const busMigrations: MigrationSet = {
  schema: 'bus',
  migrations: [
    sqlMigration('0001_log', `
      create table bus.topics (
        name text primary key,
        partitions integer not null check (partitions > 0),
        created_at timestamptz not null default now()
      );

      -- One row per partition. Appends take its row lock (UPDATE ... RETURNING)
      -- to claim offsets, which both makes offsets contiguous and serialises
      -- appends per partition, so they commit, and become visible, in offset order.
      create table bus.partitions (
        topic text not null references bus.topics (name) on delete cascade,
        partition integer not null check (partition >= 0),
        next_offset bigint not null default 0,
        primary key (topic, partition)
      );

      create table bus.messages (
        topic text not null,
        partition integer not null,
        "offset" bigint not null,
        key text not null,
        value jsonb not null,
        headers jsonb not null default '{}',
        created_at timestamptz not null default now(),
        primary key (topic, partition, "offset")
      );
      -- For the retention sweep.
      create index messages_created_at_idx on bus.messages (created_at);

      -- Live members of consumer groups. A member is alive while it
      -- heartbeats and its dedicated session (pid) exists.
      create table bus.members (
        group_id text not null,
        member_id text not null,
        topics text[] not null,
        pid integer not null,
        heartbeat_at timestamptz not null default now(),
        primary key (group_id, member_id)
      );

      -- Committed positions. The row exists from the first time a member
      -- claims the partition; its id keys the advisory lock that proves
      -- ownership, so lock keys never collide within the bus.
      create table bus.offsets (
        id integer generated always as identity unique,
        group_id text not null,
        topic text not null,
        partition integer not null,
        -- The next offset to deliver; null until the group first commits.
        next_offset bigint,
        committed_at timestamptz,
        primary key (group_id, topic, partition)
      );
    `),
    // Topics whose messages the retention sweep never deletes (TopicSpec.retainForever).
    sqlMigration('0002_retain_forever', 'alter table bus.topics add column retain_forever boolean not null default false'),
    // Record batches (store.ts append): a row per partition per append, its
    // records a JSON array kept as text (the database never parses it).
    // Messages stored before become batches of one.
    sqlMigration('0003_record_batches', `
      create table bus.batches (
        topic text not null,
        partition integer not null,
        base_offset bigint not null,
        last_offset bigint not null check (last_offset >= base_offset),
        records text not null,
        created_at timestamptz not null default now(),
        primary key (topic, partition, base_offset)
      );
      -- Kept out of line uncompressed: the default (pglz on anything over 2 kB) cost the
      -- database more CPU than all the rest of an append (the records are mostly sealed,
      -- base64, and compress poorly).
      alter table bus.batches alter column records set storage external;
      insert into bus.batches (topic, partition, base_offset, last_offset, records, created_at)
        select topic, partition, "offset", "offset",
               case when headers = '{}'::jsonb then jsonb_build_array(key, value) else jsonb_build_array(key, value, headers) end::text,
               created_at
        from bus.messages;
      drop table bus.messages;
      -- For the retention sweep.
      create index batches_created_at_idx on bus.batches (created_at);
      -- Message by message, for people reading the log with psql (and tests); read-only.
      create view bus.messages as
        select b.topic, b.partition, b.base_offset + x.n - 1 as "offset", x.r ->> 0 as key, x.r -> 1 as value,
               coalesce(x.r -> 2, '{}'::jsonb) as headers, b.created_at
        from bus.batches b cross join lateral jsonb_array_elements(b.records::jsonb) with ordinality as x (r, n);
    `),
  ],
};
