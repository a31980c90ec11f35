import { EventEmitter } from 'node:events';
import { describe, expect, it, jest } from '@jest/globals';
import { createLogger } from '../logging';
import { Lifecycle, type SignalTarget } from './lifecycle';

const logger = createLogger({ name: 'lifecycle-test', level: 'silent' });

const tick = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

class FakeProcess extends EventEmitter implements SignalTarget {
  readonly exit = jest.fn<(code: number) => void>();
}

describe('Lifecycle.shutdown', () => {
  it('runs steps in registration order, each after the previous one finished', async () => {
    const events: string[] = [];
    const lifecycle = new Lifecycle({ logger });
    for (const name of ['http', 'consumers', 'producer', 'db-pool']) {
      lifecycle.register(name, async () => {
        events.push(`${name}:start`);
        await tick(5);
        events.push(`${name}:end`);
      });
    }
    const report = await lifecycle.shutdown();
    expect(events).toEqual([
      'http:start', 'http:end',
      'consumers:start', 'consumers:end',
      'producer:start', 'producer:end',
      'db-pool:start', 'db-pool:end',
    ]);
    expect(report.ok).toBe(true);
    expect(report.steps.map((step) => [step.name, step.outcome])).toEqual([
      ['http', 'ok'], ['consumers', 'ok'], ['producer', 'ok'], ['db-pool', 'ok'],
    ]);
  });

  it('runs steps registered with registerFirst before the earlier ones (release in reverse of acquisition)', async () => {
    const order: string[] = [];
    const lifecycle = new Lifecycle({ logger });
    for (const name of ['database', 'bus', 'http']) lifecycle.registerFirst(name, () => void order.push(name));
    lifecycle.register('last-words', () => void order.push('last-words'));
    await lifecycle.shutdown();
    expect(order).toEqual(['http', 'bus', 'database', 'last-words']);
  });

  it('runs once: concurrent and later calls share one promise', async () => {
    const run = jest.fn(async () => tick(10));
    const lifecycle = new Lifecycle({ logger }).register('http', run);
    const first = lifecycle.shutdown();
    const second = lifecycle.shutdown();
    expect(second).toBe(first);
    expect(lifecycle.shuttingDown).toBe(true);
    await first;
    expect(lifecycle.shutdown()).toBe(first);
    await lifecycle.shutdown();
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('keeps going after a step throws (sync or async) and reports it', async () => {
    const ran: string[] = [];
    const lifecycle = new Lifecycle({ logger })
      .register('sync-throw', () => {
        ran.push('sync-throw');
        throw new Error('boom');
      })
      .register('async-reject', async () => {
        ran.push('async-reject');
        await Promise.reject(new Error('boom'));
      })
      .register('db-pool', () => {
        ran.push('db-pool');
      });
    const report = await lifecycle.shutdown();
    expect(ran).toEqual(['sync-throw', 'async-reject', 'db-pool']);
    expect(report.ok).toBe(false);
    expect(report.steps.map((step) => step.outcome)).toEqual(['failed', 'failed', 'ok']);
  });

  it('gives up on a step after its timeout and moves on', async () => {
    const lifecycle = new Lifecycle({ logger, defaultStepTimeoutMs: 5_000 })
      .register('stuck', () => new Promise<void>(() => undefined), { timeoutMs: 50 })
      .register('db-pool', () => undefined);
    const startedAt = Date.now();
    const report = await lifecycle.shutdown();
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    expect(report.steps.map((step) => step.outcome)).toEqual(['timed_out', 'ok']);
    expect(report.ok).toBe(false);
  });

  it('refuses duplicate names and registration after shutdown started', async () => {
    const lifecycle = new Lifecycle({ logger }).register('http', () => undefined);
    expect(() => lifecycle.register('http', () => undefined)).toThrow(/already registered/);
    await lifecycle.shutdown();
    expect(() => lifecycle.register('late', () => undefined)).toThrow(/after shutdown started/);
  });

  it('logs each step', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const destination = { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) };
    const lifecycle = new Lifecycle({ logger: createLogger({ name: 't', destination }) })
      .register('http', () => undefined)
      .register('db-pool', () => {
        throw new Error('pool gone');
      });
    await lifecycle.shutdown('test');
    expect(lines.map((line) => [line.msg, line.step])).toEqual([
      ['shutdown started', undefined],
      ['shutdown step done', 'http'],
      ['shutdown step failed', 'db-pool'],
      ['shutdown finished', undefined],
    ]);
  });
});

describe('Lifecycle.installSignalHandlers', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('%s shuts down, then exits 0', async (signal) => {
    const proc = new FakeProcess();
    const run = jest.fn(() => undefined);
    const lifecycle = new Lifecycle({ logger }).register('http', run);
    lifecycle.installSignalHandlers(proc);
    proc.emit(signal, signal);
    await lifecycle.shutdown();
    await tick();
    expect(run).toHaveBeenCalledTimes(1);
    expect(proc.exit).toHaveBeenCalledWith(0);
  });

  it('exits 1 when a step failed', async () => {
    const proc = new FakeProcess();
    const lifecycle = new Lifecycle({ logger }).register('http', () => {
      throw new Error('x');
    });
    lifecycle.installSignalHandlers(proc);
    proc.emit('SIGTERM', 'SIGTERM');
    await lifecycle.shutdown();
    await tick();
    expect(proc.exit).toHaveBeenCalledWith(1);
  });

  it('a second signal during shutdown exits 1 immediately', async () => {
    const proc = new FakeProcess();
    let finish!: () => void;
    const lifecycle = new Lifecycle({ logger }).register('http', () => new Promise<void>((resolve) => (finish = resolve)));
    lifecycle.installSignalHandlers(proc);
    proc.emit('SIGTERM', 'SIGTERM');
    proc.emit('SIGINT', 'SIGINT');
    expect(proc.exit).toHaveBeenCalledWith(1);
    await tick(); // steps start on a later tick
    finish();
    await lifecycle.shutdown();
  });

  it('returns an uninstaller', () => {
    const proc = new FakeProcess();
    const uninstall = new Lifecycle({ logger }).installSignalHandlers(proc);
    expect(proc.listenerCount('SIGTERM')).toBe(1);
    expect(proc.listenerCount('SIGINT')).toBe(1);
    uninstall();
    expect(proc.listenerCount('SIGTERM')).toBe(0);
    expect(proc.listenerCount('SIGINT')).toBe(0);
  });

  it('accepts the real process object', () => {
    const before = process.listenerCount('SIGTERM');
    const uninstall = new Lifecycle({ logger }).installSignalHandlers(process);
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    uninstall();
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });
});
