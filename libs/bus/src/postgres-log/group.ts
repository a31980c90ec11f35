import type { GroupMember, TopicPartition } from './assignment';
import type { Queryable } from './store';

/** NOTIFY channel of membership changes; the payload is the group id. */
export const GROUPS_CHANNEL = 'bus_groups';

/**
 * First key of every partition lock (the two-int form of advisory locks, so
 * they cannot collide with single-bigint locks such as the migrations'); the
 * second key is the bus.offsets row id of (group, topic, partition).
 */
const LOCK_SPACE = 0x62757331;

/**
 * One member's view of its consumer group, over the member's own session.
 * Owning a partition means holding its session-level advisory lock on that
 * session: two members can never hold one partition at once, and when the
 * session dies (crash, network cut) the server releases the lock.
 */
export class GroupSession {
  private readonly lockIds = new Map<string, number>();

  constructor(
    private readonly q: Queryable,
    readonly groupId: string,
    readonly memberId: string,
  ) {}

  /** Registers or refreshes this member, bound to this session's backend pid. */
  async heartbeat(topics: readonly string[]): Promise<void> {
    await this.q.query(
      `insert into bus.members (group_id, member_id, topics, pid) values ($1, $2, $3, pg_backend_pid())
       on conflict (group_id, member_id)
       do update set topics = excluded.topics, pid = excluded.pid, heartbeat_at = now()`,
      [this.groupId, this.memberId, topics],
    );
  }

  /** Wakes the group's other members so they rebalance now rather than at their next tick. */
  async announce(): Promise<void> {
    await this.q.query('select pg_notify($1, $2)', [GROUPS_CHANNEL, this.groupId]);
  }

  /**
   * Members alive now, sorted. A member is alive while it heartbeats AND its
   * session exists: a crashed member disappears as soon as its connection
   * does, a hung one after the session timeout. The dead are deleted.
   */
  async liveMembers(sessionTimeoutMs: number): Promise<GroupMember[]> {
    await this.q.query(
      `delete from bus.members m
       where m.group_id = $1 and (m.heartbeat_at < now() - make_interval(secs => $2)
         or not exists (select 1 from pg_stat_activity a where a.pid = m.pid))`,
      [this.groupId, sessionTimeoutMs / 1000],
    );
    const { rows } = await this.q.query<{ member_id: string; topics: string[] }>(
      'select member_id, topics from bus.members where group_id = $1 order by member_id',
      [this.groupId],
    );
    return rows.map((r) => ({ memberId: r.member_id, topics: r.topics }));
  }

  async partitionCounts(topics: readonly string[]): Promise<Map<string, number>> {
    const { rows } = await this.q.query<{ name: string; partitions: number }>(
      'select name, partitions from bus.topics where name = any ($1::text[])',
      [topics],
    );
    return new Map(rows.map((r) => [r.name, r.partitions]));
  }

  /**
   * Tries to take a partition. On success returns the group's committed
   * position (null if it never committed), read AFTER the lock was granted:
   * the previous owner commits before it unlocks, so this read sees its last
   * commit.
   */
  async claim(tp: TopicPartition): Promise<{ owned: false } | { owned: true; committed: number | null }> {
    const id = await this.lockId(tp);
    const { rows } = await this.q.query<{ locked: boolean }>('select pg_try_advisory_lock($1, $2) as locked', [
      LOCK_SPACE,
      id,
    ]);
    if (!rows[0]?.locked) return { owned: false };
    const committed = await this.q.query<{ next_offset: string | number | null }>(
      'select next_offset from bus.offsets where id = $1',
      [id],
    );
    const next = committed.rows[0]?.next_offset;
    return { owned: true, committed: next === null || next === undefined ? null : Number(next) };
  }

  async release(tp: TopicPartition): Promise<void> {
    await this.q.query('select pg_advisory_unlock($1, $2)', [LOCK_SPACE, await this.lockId(tp)]);
  }

  /**
   * Records the next offset to deliver. Runs on the session that holds the
   * partition's lock, so a member whose session died (and so lost the lock)
   * cannot commit over its successor.
   */
  async commit(tp: TopicPartition, nextOffset: number): Promise<void> {
    await this.q.query({
      name: 'svc_bus_commit',
      text: 'update bus.offsets set next_offset = $2, committed_at = now() where id = $1',
      values: [await this.lockId(tp), nextOffset],
    });
  }

  /** Leaves cleanly: releases every lock, deletes the member, and tells the others. */
  async leave(): Promise<void> {
    await this.q.query('select pg_advisory_unlock_all()');
    await this.q.query('delete from bus.members where group_id = $1 and member_id = $2', [this.groupId, this.memberId]);
    await this.announce();
  }

  private async lockId(tp: TopicPartition): Promise<number> {
    const key = `${tp.topic}\u0000${tp.partition}`;
    const known = this.lockIds.get(key);
    if (known !== undefined) return known;
    const params = [this.groupId, tp.topic, tp.partition];
    await this.q.query(
      'insert into bus.offsets (group_id, topic, partition) values ($1, $2, $3) on conflict do nothing',
      params,
    );
    const { rows } = await this.q.query<{ id: number }>(
      'select id from bus.offsets where group_id = $1 and topic = $2 and partition = $3',
      params,
    );
    const id = rows[0]?.id;
    if (id === undefined) throw new Error(`no offsets row for ${this.groupId} ${key}`);
    this.lockIds.set(key, id);
    return id;
  }
}
