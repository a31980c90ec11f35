import { describe, expect, it } from '@jest/globals';
import type { Logger } from '../logging';
import { RepeatingDrain } from './drain';

function recordingLogger(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const logger = { warn: (_obj: object, msg: string) => warnings.push(msg) } as unknown as Logger;
  return { logger, warnings };
}

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('RepeatingDrain', () => {
  it('runs once more when called during a run, and not once per call', async () => {
    const gates = [deferred(), deferred()];
    let runs = 0;
    const drain = new RepeatingDrain(() => gates[runs++]!.promise, recordingLogger().logger, 'left for later');
    const first = drain.run();
    void drain.run();
    void drain.run();
    gates[0]!.resolve();
    gates[1]!.resolve();
    await first;
    expect(runs).toBe(2);
  });

  it('never throws: a failed run is logged, and the next call runs again', async () => {
    const { logger, warnings } = recordingLogger();
    let runs = 0;
    const drain = new RepeatingDrain(async () => {
      runs++;
      if (runs === 1) throw new Error('log unavailable');
    }, logger, 'decisions not published yet; will retry');
    await expect(drain.run()).resolves.toBeUndefined();
    expect(warnings).toEqual(['decisions not published yet; will retry']);
    await drain.run();
    expect(runs).toBe(2);
  });

  it('runs at start and on its interval until stopped, and stop waits for the run in hand', async () => {
    let runs = 0;
    let finished = 0;
    const drain = new RepeatingDrain(async () => {
      runs++;
      await new Promise((r) => setTimeout(r, 20));
      finished++;
    }, recordingLogger().logger, 'left for later');
    drain.start(30);
    await new Promise((r) => setTimeout(r, 120));
    await drain.stop();
    const afterStop = runs;
    expect(afterStop).toBeGreaterThanOrEqual(2);
    expect(finished).toBe(runs);
    await new Promise((r) => setTimeout(r, 80));
    expect(runs).toBe(afterStop);
  });
});
