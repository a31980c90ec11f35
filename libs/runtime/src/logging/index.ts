export { createLogger, REDACTED_PATHS, REDACTION_CENSOR } from './create-logger';
export type { CreateLoggerOptions, Logger, LogLevel } from './create-logger';
