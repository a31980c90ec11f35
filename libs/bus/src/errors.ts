import { DEAD_LETTER_HEADERS } from '@svc/contracts';
import { AppError, UnavailableError } from '@svc/runtime';

/** A message does not match its topic's schema; refused before it is sent. */
export class SchemaViolationError extends AppError {
  constructor(
    readonly topic: string,
    readonly problem: string,
  ) {
    super(`message for topic ${topic} violates its schema: ${problem}`);
  }
}

/** The log (broker or database) cannot be reached; try again later. */
export class BusUnavailableError extends UnavailableError {}

/** Header set on a dead-lettered message: why it was parked. */
export const DLQ_REASON_HEADER = DEAD_LETTER_HEADERS.reason;
/** Header set on a dead-lettered message: where it came from (`topic/partition/offset`). */
export const DLQ_SOURCE_HEADER = DEAD_LETTER_HEADERS.source;
