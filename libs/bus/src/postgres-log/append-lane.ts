import type { OutgoingMessage } from '../port';
import { BatchGatherer } from '../shared';

/**
 * Above this many messages an append takes no more calls (a single call
 * larger than this still goes, alone): one statement's rows, and the time
 * the partitions' head locks are held.
 */
const MAX_GROUP_MESSAGES = 2_000;

interface Call {
  messages: readonly OutgoingMessage[];
  settle: (error: Error | undefined) => void;
  /** Given up by its caller (its deadline passed) while still queued: not appended. */
  abandoned: boolean;
}

/**
 * Group commit for one topic of the Postgres-backed log. Every append locks
 * the head rows of the partitions it writes until it commits, so appends
 * that share a partition (a request's batch usually touches them all) go
 * one after another, each waiting for the previous one's commit and its
 * flush to disk. Instead the lane keeps one append in flight and gathers
 * every call that arrives meanwhile into the next (BatchGatherer: one
 * statement, one transaction, one flush), so the partitions' locks are
 * taken once per group rather than per call. A partition's messages are
 * stored in the order produce() was called; a call is answered once the
 * append that holds it has committed.
 *
 * A group stores all of its calls or none. When one fails for a reason
 * other than the database being unreachable (a value the database refuses,
 * say), each of its calls is appended again alone, so one caller's bad
 * messages never cost another caller's.
 */
export class AppendLane {
  private readonly gatherer: BatchGatherer<Call>;

  constructor(
    /** Appends messages in one statement and one transaction (store.ts append). */
    private readonly append: (messages: readonly OutgoingMessage[]) => Promise<void>,
    /** Whether an error means the database could not be reached (then no call is tried again alone). */
    private readonly isUnavailable: (err: unknown) => boolean,
  ) {
    this.gatherer = new BatchGatherer<Call>({
      maxSize: MAX_GROUP_MESSAGES,
      sizeOf: (call) => call.messages.length,
      dropped: (call) => call.abandoned,
      run: (group) => this.appendGroup(group),
    });
  }

  /** Queues `messages`; `done` settles once they are committed (or failed). `abandon` drops them if not yet taken. */
  submit(messages: readonly OutgoingMessage[]): { done: Promise<void>; abandon: () => void } {
    let call!: Call;
    const done = new Promise<void>((resolve, reject) => {
      call = { messages, settle: (error) => (error ? reject(error) : resolve()), abandoned: false };
    });
    this.gatherer.push(call);
    return {
      done,
      abandon: () => {
        call.abandoned = true;
      },
    };
  }

  private async appendGroup(group: readonly Call[]): Promise<void> {
    try {
      await this.append(group.length === 1 ? group[0]!.messages : group.flatMap((c) => c.messages));
      for (const call of group) call.settle(undefined);
      return;
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err), { cause: err });
      if (group.length === 1 || this.isUnavailable(err)) {
        for (const call of group) call.settle(error);
        return;
      }
    }
    // The group failed on its contents: each call alone, in order, answers for its own messages.
    for (const call of group) {
      try {
        await this.append(call.messages);
        call.settle(undefined);
      } catch (err) {
        call.settle(err instanceof Error ? err : new Error(String(err), { cause: err }));
      }
    }
  }
}
