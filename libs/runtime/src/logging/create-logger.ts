import pino from 'pino';

/** The logger every module receives; an alias so callers never import pino directly. */
export type Logger = pino.Logger;

export type LogLevel = pino.LevelWithSilent;

export interface CreateLoggerOptions {
  /** Service or component name, emitted as `name` on every line. */
  name: string;
  level?: LogLevel;
  /**
   * Where lines go; defaults to stdout. Tests pass an in-memory stream to inspect
   * what was written (e.g. that redaction worked).
   */
  destination?: pino.DestinationStream;
}

/**
 * Paths whose values are replaced before a line is serialised, so API keys, bearer
 * tokens and passwords never reach log storage even when a whole request or
 * config object is logged. pino wildcards match exactly one level, hence both the
 * top-level and the `*.` forms.
 */
export const REDACTED_PATHS: readonly string[] = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  '*.authorization',
  'key',
  '*.key',
  'apiKey',
  '*.apiKey',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'token',
  '*.token',
];

export const REDACTION_CENSOR = '[Redacted]';

export function createLogger(options: CreateLoggerOptions): Logger {
  const config: pino.LoggerOptions = {
    name: options.name,
    level: options.level ?? 'info',
    redact: { paths: [...REDACTED_PATHS], censor: REDACTION_CENSOR },
    // ISO timestamps and level labels keep lines readable in any log viewer
    // without knowing pino's numeric levels.
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  return options.destination ? pino(config, options.destination) : pino(config);
}
