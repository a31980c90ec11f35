import type { Consumer } from 'kafkajs';

type Target = Pick<Consumer, 'pause' | 'resume'>;

interface BackOff {
  topic: string;
  partition: number;
  timer: NodeJS.Timeout;
}

/**
 * Two reasons to stop fetching, kept apart: the subscriber's pause() (every
 * topic), and a partition backing off after its handler threw. kafkajs keeps
 * one state per topic, in which a topic-wide pause and a partition-level one
 * overwrite each other, so this class owns the truth and tells kafkajs only
 * what must hold: while paused, whole topics; otherwise the backing-off partitions.
 */
export class PauseControl {
  private userPaused = false;
  private readonly backingOff = new Map<string, BackOff>();

  constructor(
    private readonly target: Target,
    private readonly topics: readonly string[],
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  get paused(): boolean {
    return this.userPaused;
  }

  pause(): void {
    this.userPaused = true;
    this.apply();
  }

  resume(): void {
    this.userPaused = false;
    this.call(() => this.target.resume(this.topics.map((topic) => ({ topic }))));
    this.apply();
  }

  /** Stops fetching `topic/partition` for `ms`, then fetches it again (unless the subscriber paused meanwhile). */
  backOff(topic: string, partition: number, ms: number): void {
    const key = `${topic}/${partition}`;
    clearTimeout(this.backingOff.get(key)?.timer);
    const timer = setTimeout(() => {
      this.backingOff.delete(key);
      if (!this.userPaused) this.call(() => this.target.resume([{ topic, partitions: [partition] }]));
    }, ms);
    timer.unref();
    this.backingOff.set(key, { topic, partition, timer });
    if (!this.userPaused) this.call(() => this.target.pause([{ topic, partitions: [partition] }]));
  }

  /** Tells kafkajs the whole state again; after a (re)join its state may be new. */
  apply(): void {
    if (this.userPaused) {
      this.call(() => this.target.pause(this.topics.map((topic) => ({ topic }))));
      return;
    }
    for (const { topic, partition } of this.backingOff.values()) {
      this.call(() => this.target.pause([{ topic, partitions: [partition] }]));
    }
  }

  clear(): void {
    for (const { timer } of this.backingOff.values()) clearTimeout(timer);
    this.backingOff.clear();
  }

  /** kafkajs throws when its consumer group is not there (between a crash and its restart); the next join re-applies. */
  private call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.onError(err);
    }
  }
}
