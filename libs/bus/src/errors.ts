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
