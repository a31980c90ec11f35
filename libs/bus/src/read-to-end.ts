import { randomBytes } from 'node:crypto';
import type { TopicSpec } from '@svc/contracts';
import type { Bus, IncomingMessage } from './port';

/**
 * Reads a topic from its beginning up to where it ended when the call began
 * (a replay's "everything so far"), handing batches to `consume` one at a
 * time, in each partition's order. Uses a throwaway consumer group; what was
 * appended after the call began may or may not be included.
 */
export async function readToEnd<T>(
  bus: Bus,
  topic: TopicSpec,
  consume: (messages: ReadonlyArray<IncomingMessage<T>>) => Promise<void>,
  options: { maxBatchSize?: number; groupId?: string } = {},
): Promise<void> {
  const ends = (await bus.endOffsets(topic)).map((o) => BigInt(o));
  const reached = ends.map((end) => end === 0n);
  if (reached.every(Boolean)) return;
  let done: () => void = () => {};
  let failed: (err: unknown) => void = () => {};
  const finished = new Promise<void>((resolve, reject) => {
    done = resolve;
    failed = reject;
  });
  // The adapters may run partitions' handlers concurrently; `consume` sees one batch at a time.
  let chain = Promise.resolve();
  const subscription = await bus.subscribe<T>({
    groupId: options.groupId ?? `read-to-end-${topic.name}-${Date.now()}-${randomBytes(3).toString('hex')}`,
    topics: [topic],
    fromBeginning: true,
    maxBatchSize: options.maxBatchSize ?? 500,
    handler: (batch) => {
      const run = chain.then(async () => {
        if (reached.every(Boolean)) return;
        const end = ends[batch.partition] ?? 0n;
        const wanted = batch.messages.filter((m) => BigInt(m.offset) < end);
        if (wanted.length > 0) await consume(wanted);
        const last = batch.messages.at(-1);
        if (last && BigInt(last.offset) + 1n >= end) reached[batch.partition] = true;
        if (reached.every(Boolean)) done();
      });
      chain = run.catch(() => {});
      // A failure ends the read: the batch is not acknowledged, and the caller sees why.
      run.catch(failed);
      return run;
    },
  });
  try {
    await finished;
  } finally {
    await subscription.stop();
  }
}
