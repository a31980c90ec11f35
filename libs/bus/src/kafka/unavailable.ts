import { NETWORK_ERROR_CODES } from '@svc/runtime';
import { BusUnavailableError } from '../errors';
import { withDeadline } from '../shared';

/** kafkajs errors that mean "no broker answered", not "the broker refused this request". */
const UNAVAILABLE_NAMES = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSNoBrokerAvailableError',
  'KafkaJSMetadataNotLoaded',
  'KafkaJSTopicMetadataNotLoaded',
  'KafkaJSLockTimeout',
  'KafkaJSGroupCoordinatorNotFound',
]);

/**
 * The broker's own "not now" that kafkajs does not mark retriable: the
 * producer's id or sequence out of step after a failed request. The lane
 * that got it takes a new producer id (send.ts), so the next attempt is a
 * fresh start: the request is to be tried again, not blamed on its events.
 */
const PRODUCER_STATE_TYPES: ReadonlySet<string> = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_EPOCH']);

/** Node's socket errors (runtime's one list), and axios's for the registry client. */
const NETWORK_CODES: ReadonlySet<string> = new Set([...NETWORK_ERROR_CODES, 'ERR_NETWORK']);

/**
 * Whether an error (from kafkajs or from the schema registry client) means
 * Kafka or the registry cannot be reached now, as opposed to a bad request.
 * Duck-typed: kafkajs and axios errors are not exported as classes we can
 * rely on, and errors of node's net module may come from another realm under jest.
 */
export function isUnavailable(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 5) return false;
  const { name, code, status, cause, originalError, type, retriable } = err as {
    name?: unknown;
    code?: unknown;
    status?: unknown;
    cause?: unknown;
    originalError?: unknown;
    type?: unknown;
    retriable?: unknown;
  };
  if (typeof name === 'string' && UNAVAILABLE_NAMES.has(name)) return true;
  // A broker's answer that the request may succeed later (too few in-sync replicas, a leader moving, a request timed out).
  if (name === 'KafkaJSProtocolError' && (retriable === true || (typeof type === 'string' && PRODUCER_STATE_TYPES.has(type)))) return true;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  // The registry client's RestError: a 5xx is the registry's trouble, not ours.
  if (typeof status === 'number' && status >= 500) return true;
  return isUnavailable(cause, depth + 1) || isUnavailable(originalError, depth + 1);
}

/**
 * Runs `work`, turning "cannot reach Kafka or the registry" (or no answer
 * within `ms`) into a retriable BusUnavailableError; other errors pass as they are.
 */
export async function guard<R>(what: string, work: Promise<R>, ms: number | undefined): Promise<R> {
  const unavailable = (cause?: unknown) => new BusUnavailableError(`bus: cannot ${what}: Kafka or the schema registry is unavailable`, { cause });
  try {
    return ms === undefined ? await work : await withDeadline(work, ms, () => unavailable(new Error(`no answer within ${ms} ms`)));
  } catch (err) {
    if (err instanceof BusUnavailableError) throw err;
    if (isUnavailable(err)) throw unavailable(err);
    throw err;
  }
}
