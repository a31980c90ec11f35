import { describe, expect, it } from '@jest/globals';
import { KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from 'kafkajs';
import { isUnavailable } from './unavailable';

/** kafkajs's own error for a broker's error code, as its decoder makes it. */
const protocol = (type: string, retriable: boolean) => Object.assign(new KafkaJSProtocolError(`broker said ${type}`), { type, retriable });

describe('isUnavailable', () => {
  it.each([
    ['too few in-sync replicas (retriable)', protocol('NOT_ENOUGH_REPLICAS', true)],
    ['a leader moving (retriable)', protocol('NOT_LEADER_FOR_PARTITION', true)],
    ['a producer out of sequence', protocol('OUT_OF_ORDER_SEQUENCE_NUMBER', false)],
    ['an unknown producer id', protocol('UNKNOWN_PRODUCER_ID', false)],
    ['retries exhausted on too few replicas', new KafkaJSNumberOfRetriesExceeded(protocol('NOT_ENOUGH_REPLICAS', true), { retryCount: 2, retryTime: 100 })],
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })],
  ])('%s: try again later', (_, err) => {
    expect(isUnavailable(err)).toBe(true);
  });

  it.each([
    ['a record too large', protocol('MESSAGE_TOO_LARGE', false)],
    ['a record the broker finds invalid', protocol('INVALID_RECORD', false)],
    ['an error of ours', new Error('bus: schema violation')],
  ])('%s: blame the request', (_, err) => {
    expect(isUnavailable(err)).toBe(false);
  });
});
