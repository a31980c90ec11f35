import type { Logger } from '../logging';

export type ShutdownStepOutcome = 'ok' | 'failed' | 'timed_out';

export interface ShutdownStepResult {
  name: string;
  outcome: ShutdownStepOutcome;
  durationMs: number;
}

export interface ShutdownReport {
  /** True when every step finished in time without throwing. */
  ok: boolean;
  steps: ShutdownStepResult[];
}

export interface LifecycleOptions {
  logger: Logger;
  /** Per-step limit unless the step sets its own. Default 10 s. */
  defaultStepTimeoutMs?: number;
}

/** The slice of `process` the signal wiring needs; tests pass a fake. */
export interface SignalTarget {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  removeListener(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): void;
}

interface Step {
  name: string;
  run: () => Promise<void> | void;
  timeoutMs: number;
}

export const DEFAULT_STEP_TIMEOUT_MS = 10_000;

/**
 * Ordered, once-only shutdown. Services register steps in the order they must
 * stop (typically 'http' → 'consumers' → 'producer' → 'db-pool': stop taking work,
 * finish it, flush, then release connections). `shutdown()` runs them in that
 * order exactly once; concurrent or repeated calls share the same promise. A step
 * that throws or overruns its timeout is logged and skipped so later steps (e.g.
 * closing the pool) still run.
 */
export class Lifecycle {
  private readonly steps: Step[] = [];
  private readonly logger: Logger;
  private readonly defaultStepTimeoutMs: number;
  private shutdownPromise: Promise<ShutdownReport> | undefined;

  constructor(options: LifecycleOptions) {
    this.logger = options.logger;
    this.defaultStepTimeoutMs = options.defaultStepTimeoutMs ?? DEFAULT_STEP_TIMEOUT_MS;
  }

  get shuttingDown(): boolean {
    return this.shutdownPromise !== undefined;
  }

  register(name: string, run: () => Promise<void> | void, options: { timeoutMs?: number } = {}): this {
    this.steps.push(this.step(name, run, options));
    return this;
  }

  /**
   * Registers a step that runs before every step registered so far. A
   * composition root calls it as it acquires each resource (database, bus,
   * HTTP), so shutdown releases them in reverse, and a start-up that fails
   * half-way releases exactly what it had acquired.
   */
  registerFirst(name: string, run: () => Promise<void> | void, options: { timeoutMs?: number } = {}): this {
    this.steps.unshift(this.step(name, run, options));
    return this;
  }

  private step(name: string, run: () => Promise<void> | void, options: { timeoutMs?: number }): Step {
    if (this.shuttingDown) throw new Error(`Lifecycle: cannot register '${name}' after shutdown started`);
    if (this.steps.some((step) => step.name === name)) throw new Error(`Lifecycle: step '${name}' already registered`);
    return { name, run, timeoutMs: options.timeoutMs ?? this.defaultStepTimeoutMs };
  }

  shutdown(reason = 'requested'): Promise<ShutdownReport> {
    this.shutdownPromise ??= this.runSteps(reason);
    return this.shutdownPromise;
  }

  /**
   * SIGTERM / SIGINT → `shutdown()` → `exit(0)`, or `exit(1)` if a step failed. A
   * second signal while shutting down exits(1) at once (e.g. a second Ctrl-C).
   * Returns a function that removes the handlers.
   */
  installSignalHandlers(
    target: SignalTarget,
    signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'],
  ): () => void {
    const onSignal = (signal: NodeJS.Signals): void => {
      if (this.shuttingDown) {
        this.logger.warn({ signal }, 'second signal during shutdown; exiting now');
        target.exit(1);
        return;
      }
      this.logger.info({ signal }, 'signal received; shutting down');
      this.shutdown(signal).then(
        (report) => target.exit(report.ok ? 0 : 1),
        // runSteps never rejects, but an exit must happen whatever goes wrong.
        () => target.exit(1),
      );
    };
    for (const signal of signals) target.on(signal, onSignal);
    return () => {
      for (const signal of signals) target.removeListener(signal, onSignal);
    };
  }

  private async runSteps(reason: string): Promise<ShutdownReport> {
    this.logger.info({ reason, steps: this.steps.map((step) => step.name) }, 'shutdown started');
    const results: ShutdownStepResult[] = [];
    for (const step of this.steps) {
      results.push(await this.runStep(step));
    }
    const ok = results.every((result) => result.outcome === 'ok');
    this.logger[ok ? 'info' : 'warn']({ reason, ok }, 'shutdown finished');
    return { ok, steps: results };
  }

  private async runStep(step: Step): Promise<ShutdownStepResult> {
    const startedAt = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timed_out'>((resolve) => {
      timer = setTimeout(() => resolve('timed_out'), step.timeoutMs);
    });
    // Promise.resolve().then(...) turns a synchronous throw into a rejection too.
    const ran = Promise.resolve()
      .then(step.run)
      .then(
        (): ShutdownStepOutcome => 'ok',
        (err: unknown): ShutdownStepOutcome => {
          this.logger.error({ err, step: step.name }, 'shutdown step failed');
          return 'failed';
        },
      );
    const outcome = await Promise.race([ran, timedOut]);
    clearTimeout(timer);
    const durationMs = Date.now() - startedAt;
    if (outcome === 'timed_out') {
      this.logger.error({ step: step.name, timeoutMs: step.timeoutMs }, 'shutdown step timed out');
    } else if (outcome === 'ok') {
      this.logger.info({ step: step.name, durationMs }, 'shutdown step done');
    }
    return { name: step.name, outcome, durationMs };
  }
}
