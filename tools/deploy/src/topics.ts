import { BusUnavailableError, busConfigSpec, checkBus, createBus, prefixedTopics, type BusConfig } from '@svc/bus';
import { checkDatabase, createDb, createLogger, databaseConnection, loadConfigOrExit, type DatabaseTlsConfig, type Logger } from '@svc/runtime';
import { jobConfigSpec, type Environment } from './job-config';

/** The jobs' settings and the log's (the Postgres-backed log keeps its partitions in the database). */
const configSpec = { ...jobConfigSpec, ...busConfigSpec };

/** The `topics` job: creates the deployment's topics, then exits 0. */
export async function topicsCommand(environment: Environment): Promise<number> {
  const config = loadConfigOrExit(configSpec, environment);
  const logger = createLogger({ name: 'topics', level: config.LOG_LEVEL });
  const timeoutMs = config.STARTUP_CONNECT_TIMEOUT_SECONDS * 1_000;
  await Promise.all([checkDatabase(databaseConnection(config.DATABASE_URL, config), timeoutMs), checkBus(config, timeoutMs)]);
  const topics = await createTopics(config, logger);
  logger.info({ topics, kafka: config.KAFKA_BROKERS.length > 0 }, 'topics ready');
  return 0;
}

export interface CreateTopicsOptions {
  /** Give up on a log that stays unreachable after this long. Default 120 s. */
  deadlineMs?: number;
  /** Pause between attempts. Default 2 s. */
  retryMs?: number;
}

/**
 * Creates every topic of the deployment (under its TOPIC_PREFIX) that does
 * not exist yet, grows any with fewer partitions than the contracts say, and
 * registers each topic's schema (Kafka), then returns their names. Safe to
 * run again and from two replicas at once: the bus tolerates a topic created
 * meanwhile by someone else, and registering a schema already there returns
 * its id. A log that is still starting (a broker without a controller yet)
 * is retried until `deadlineMs`.
 */
export async function createTopics(config: BusConfig & DatabaseTlsConfig & { DATABASE_URL: string }, logger: Logger, options: CreateTopicsOptions = {}): Promise<string[]> {
  const deadline = Date.now() + (options.deadlineMs ?? 120_000);
  const topics = Object.values(prefixedTopics(config.TOPIC_PREFIX));
  // The Postgres-backed log keeps its partitions in the database; Kafka never touches this pool.
  const db = createDb({ ...databaseConnection(config.DATABASE_URL, config), poolMax: 2, applicationName: 'svc-topics' });
  try {
    for (;;) {
      try {
        const bus = await createBus(config, { db, logger });
        try {
          await bus.ensureTopics(topics);
          return topics.map((t) => t.name);
        } finally {
          await bus.close();
        }
      } catch (err) {
        if (!(err instanceof BusUnavailableError) || Date.now() >= deadline) throw err;
        logger.warn({ err }, 'topics: the log is not reachable yet; trying again');
        await new Promise((resolve) => setTimeout(resolve, options.retryMs ?? 2_000));
      }
    }
  } finally {
    await db.destroy();
  }
}
