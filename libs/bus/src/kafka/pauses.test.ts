import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { PauseControl } from './pauses';

type TopicPartitions = { topic: string; partitions?: number[] };
type TopicState = { pauseAll: boolean; paused: Set<number>; resumed: Set<number> };

/**
 * kafkajs's per-topic pause state (consumer/subscriptionState.js), reduced to
 * what decides whether a partition is fetched: a topic-wide pause and a
 * partition-level one overwrite each other there.
 */
class KafkajsPauseState {
  private readonly states = new Map<string, TopicState>();
  private state(topic: string): TopicState {
    let s = this.states.get(topic);
    if (!s) this.states.set(topic, (s = { pauseAll: false, paused: new Set(), resumed: new Set() }));
    return s;
  }
  pause(tps: TopicPartitions[]): void {
    this.update(tps, true, (s, partitions) => {
      for (const p of partitions) {
        s.paused.add(p);
        s.resumed.delete(p);
      }
      s.pauseAll = false;
    });
  }
  resume(tps: TopicPartitions[]): void {
    this.update(tps, false, (s, partitions) => {
      for (const p of partitions) {
        s.paused.delete(p);
        if (s.pauseAll) s.resumed.add(p);
      }
    });
  }
  /** What pause and resume share: a whole-topic call drops the topic's partition-level state and sets `pauseAll`. */
  private update(tps: TopicPartitions[], pauseAll: boolean, onPartitions: (s: TopicState, partitions: number[]) => void): void {
    for (const { topic, partitions } of tps) {
      const s = this.state(topic);
      if (partitions) {
        onPartitions(s, partitions);
      } else {
        s.paused.clear();
        s.resumed.clear();
        s.pauseAll = pauseAll;
      }
    }
  }
  isPaused(topic: string, partition: number): boolean {
    const s = this.states.get(topic);
    return !!s && ((s.pauseAll && !s.resumed.has(partition)) || s.paused.has(partition));
  }
}

describe('PauseControl', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  const setup = () => {
    jest.useFakeTimers();
    const kafka = new KafkajsPauseState();
    const control = new PauseControl(kafka, ['a', 'b']);
    const fetched = (topic: string, partition: number) => !kafka.isPaused(topic, partition);
    return { kafka, control, fetched };
  };

  it('backs one partition off and fetches it again afterwards', () => {
    const { control, fetched } = setup();
    control.backOff('a', 1, 1_000);
    expect([fetched('a', 0), fetched('a', 1), fetched('b', 1)]).toEqual([true, false, true]);
    jest.advanceTimersByTime(1_000);
    expect(fetched('a', 1)).toBe(true);
  });

  it('a back-off during a pause does not unpause the topic, nor does its end', () => {
    const { control, fetched } = setup();
    control.pause();
    control.backOff('a', 1, 1_000);
    expect([fetched('a', 0), fetched('a', 1), fetched('b', 0)]).toEqual([false, false, false]);
    jest.advanceTimersByTime(1_000);
    expect([fetched('a', 0), fetched('a', 1)]).toEqual([false, false]);
  });

  it('resume keeps a partition that is still backing off paused', () => {
    const { control, fetched } = setup();
    control.backOff('a', 1, 1_000);
    control.pause();
    control.resume();
    expect([fetched('a', 0), fetched('a', 1), fetched('b', 1)]).toEqual([true, false, true]);
    jest.advanceTimersByTime(1_000);
    expect(fetched('a', 1)).toBe(true);
  });

  it('re-applies everything to a fresh kafkajs state (a consumer restarted after a crash)', () => {
    jest.useFakeTimers();
    let kafka = new KafkajsPauseState();
    const control = new PauseControl(
      { pause: (tps) => kafka.pause(tps), resume: (tps) => kafka.resume(tps) },
      ['a', 'b'],
    );
    control.backOff('a', 1, 1_000);
    kafka = new KafkajsPauseState();
    control.apply();
    expect([kafka.isPaused('a', 0), kafka.isPaused('a', 1)]).toEqual([false, true]);
    control.pause();
    kafka = new KafkajsPauseState();
    control.apply();
    expect([kafka.isPaused('a', 0), kafka.isPaused('b', 3)]).toEqual([true, true]);
    control.clear();
  });

  it('does not throw when kafkajs refuses (no consumer group between a crash and its restart)', () => {
    const onError = jest.fn();
    const control = new PauseControl(
      {
        pause: () => {
          throw new Error('Consumer group was not initialized');
        },
        resume: () => {},
      },
      ['a'],
      onError,
    );
    expect(() => control.pause()).not.toThrow();
    expect(onError).toHaveBeenCalled();
  });
});
