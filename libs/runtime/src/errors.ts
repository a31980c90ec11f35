/**
 * The small error taxonomy every service shares. Domain code throws these;
 * the HTTP edge and the CLI map them to responses, never raw driver text.
 */
export class AppError extends Error {
  /** Whether trying the same thing again later may succeed. */
  readonly retriable: boolean = false;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The input is wrong; the message says what to change. */
export class ValidationError extends AppError {}

/** A named thing does not exist (or belongs to another organisation). */
export class NotFoundError extends AppError {}

/** A dependency (database, log, broker) could not serve the request right now. */
export class UnavailableError extends AppError {
  override readonly retriable = true;
}
