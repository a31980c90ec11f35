import { murmur2, toPositive } from '../validate';

export interface GroupMember {
  memberId: string;
  topics: readonly string[];
}

export interface TopicPartition {
  topic: string;
  partition: number;
}

/**
 * The partitions `memberId` should own. Every member computes this alone from
 * the same inputs, so it must depend on nothing else: per topic, its sorted
 * partitions go round-robin over the sorted members subscribed to it,
 * starting at a member picked by the topic's hash (so many one-partition
 * topics do not all land on the first member). Members that briefly disagree
 * (one saw a join the other did not yet) are kept apart by the partition
 * locks, not by this function.
 */
export function assignedTo(
  memberId: string,
  members: readonly GroupMember[],
  topics: ReadonlyMap<string, number>,
): TopicPartition[] {
  const mine: TopicPartition[] = [];
  for (const [topic, partitions] of [...topics].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const candidates = members
      .filter((m) => m.topics.includes(topic))
      .map((m) => m.memberId)
      .sort();
    const at = candidates.indexOf(memberId);
    if (at < 0) continue;
    const start = toPositive(murmur2(topic)) % candidates.length;
    for (let p = 0; p < partitions; p++) {
      if ((start + p) % candidates.length === at) mine.push({ topic, partition: p });
    }
  }
  return mine;
}
