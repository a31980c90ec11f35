import type { Admin } from 'kafkajs';
import type { DeadLetterCount } from '../bus-metrics';
import { deadLetterTopicName } from '@svc/contracts';

/** Messages in every dead-letter topic of the cluster: high minus low watermark, summed over partitions. */
export async function kafkaDeadLetters(admin: Admin): Promise<DeadLetterCount[]> {
  const suffix = deadLetterTopicName('');
  const topics = (await admin.listTopics()).filter((name) => name.endsWith(suffix));
  return Promise.all(
    topics.map(async (topic) => {
      const offsets = await admin.fetchTopicOffsets(topic);
      return { topic, messages: offsets.reduce((sum, p) => sum + Number(BigInt(p.high) - BigInt(p.low)), 0) };
    }),
  );
}
