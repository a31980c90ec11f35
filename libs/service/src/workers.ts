import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * Several processes serving one port (node:cluster), for a stateless
 * service on a machine with more cores than one process keeps busy: the
 * primary only forks the workers, deals the connections out among them and
 * gathers their metrics; each worker is the whole service, as a replica is
 * (its own database pool, bus producer, caches and in-process counts).
 *
 * A worker that dies takes the others with it and the primary exits with
 * its code, so whatever supervises the process (compose, Kubernetes)
 * restarts all of it: a half-served port is never left running. SIGTERM or
 * SIGINT to the primary stops every worker the way one stops alone (drain,
 * then close), and the primary exits once they all have.
 */

/** The message a worker sends for the metrics of every worker, and the primary's answer. */
const METRICS_REQUEST = 'svc:cluster-metrics';

export function isClusterWorker(): boolean {
  return cluster.isWorker;
}

/**
 * The signals a process stops on: a worker only on the primary's SIGTERM. A
 * Ctrl-C reaches every process of the terminal's group, the workers too;
 * they leave it to the primary, which turns it into one SIGTERM each (a
 * second signal would cut a worker's drain short).
 */
export function stopSignals(): NodeJS.Signals[] {
  if (!cluster.isWorker) return ['SIGTERM', 'SIGINT'];
  process.on('SIGINT', () => undefined);
  return ['SIGTERM'];
}

/** The primary: forks `count` workers (each runs the service's main again) and supervises them; never returns. */
export function runPrimary(name: string, count: number): void {
  const aggregator = new AggregatorRegistry();
  const workers = new Set<Worker>();
  let stopping = false;
  let exitCode = 0;

  const stopAll = (signal: NodeJS.Signals) => {
    for (const w of workers) w.process.kill(signal);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      stopping = true;
      stopAll('SIGTERM');
    });
  }
  cluster.on('message', (worker, message: { type?: unknown; id?: unknown }) => {
    if (message?.type !== METRICS_REQUEST) return;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: METRICS_REQUEST, id: message.id, text }),
      (err: unknown) => worker.send({ type: METRICS_REQUEST, id: message.id, error: String((err as Error)?.message ?? err) }),
    );
  });
  cluster.on('exit', (worker, code, signal) => {
    workers.delete(worker);
    if (!stopping) {
      // One worker gone unasked: stop the rest, and exit with its code for the supervisor to see.
      stopping = true;
      exitCode = code || 1;
      process.stderr.write(`${name}: worker ${worker.process.pid} exited (${signal ?? code}); stopping the others\n`);
      stopAll('SIGTERM');
    }
    if (workers.size === 0) process.exit(exitCode);
  });
  for (let i = 0; i < count; i++) workers.add(cluster.fork());
}

/**
 * In a worker: `registry` answers the primary's gathering, and the returned
 * function renders every worker's metrics (counters and histograms summed),
 * so a scrape of the shared port counts the whole process, whichever worker
 * it reached.
 */
export function clusterMetricsRenderer(registry: Registry, timeoutMs = 5_000): () => Promise<string> {
  new AggregatorRegistry(); // registers this worker's answer to the primary's requests
  AggregatorRegistry.setRegistries(registry);
  let next = 0;
  const pending = new Map<number, (answer: { text?: string; error?: string }) => void>();
  process.on('message', (message: { type?: unknown; id?: unknown; text?: string; error?: string }) => {
    if (message?.type !== METRICS_REQUEST || typeof message.id !== 'number') return;
    pending.get(message.id)?.(message);
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error('the primary did not gather the workers\' metrics in time'));
      }, timeoutMs);
      pending.set(id, (answer) => {
        clearTimeout(timer);
        pending.delete(id);
        if (answer.text !== undefined) resolve(answer.text);
        else reject(new Error(answer.error ?? 'no metrics'));
      });
      process.send?.({ type: METRICS_REQUEST, id });
    });
}
