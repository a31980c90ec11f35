import { describe, expect, it } from '@jest/globals';
import { ConcurrentWriteError, MasterKeyMissingError, RawLogKeyError, RetriesExhaustedError, UnreadableRawEventError, classifyFailure } from '@svc/identity';
import { PoisonEventError } from './prepare';

describe('classifyFailure', () => {
  it.each([
    [Object.assign(new Error('deadlock detected'), { code: '40P01' }), 'conflict'],
    [Object.assign(new Error('could not serialize access'), { code: '40001' }), 'conflict'],
    [new ConcurrentWriteError(), 'conflict'],
    [Object.assign(new Error('duplicate key value violates unique constraint "profiles_pkey"'), { code: '23505' }), 'conflict'],
    [Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }), 'unavailable'],
    [Object.assign(new Error('too many connections'), { code: '53300' }), 'unavailable'],
    [Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'unavailable'],
    // The raw log's keys cannot be unwrapped: the deployment's master key, not the event.
    [new MasterKeyMissingError('0123456789abcdef'), 'unavailable'],
    [new RawLogKeyError('key k does not open under master key m'), 'unavailable'],
    [new UnreadableRawEventError('a sealed event does not open with its key'), 'data'],
    [Object.assign(new Error('relation "identity.events" does not exist'), { code: '42P01' }), 'unavailable'],
    [Object.assign(new Error('syntax error at or near'), { code: '42601' }), 'unavailable'],
    [new Error('Connection terminated unexpectedly'), 'unavailable'],
    [Object.assign(new Error('Knex: Timeout acquiring a connection'), { name: 'KnexTimeoutError' }), 'unavailable'],
    [new RetriesExhaustedError(8, { cause: new Error('x') }), 'unavailable'],
    [new Error('wrapped', { cause: Object.assign(new Error('deadlock'), { code: '40P01' }) }), 'conflict'],
    [Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' }), 'data'],
    [Object.assign(new Error('date/time field value out of range'), { code: '22008' }), 'data'],
    [new PoisonEventError('bad'), 'data'],
    [new TypeError('x is undefined'), 'data'],
  ])('%s → %s', (err, kind) => {
    expect(classifyFailure(err)).toBe(kind);
  });
});
