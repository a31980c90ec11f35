import { describe, expect, it } from '@jest/globals';
import { isDatabaseUnavailable, isStatementMismatch } from './unavailable';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable: the SQL codes agreed once', () => {
  it.each([
    ['connection refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), true],
    ['connection failure (08006)', pgError('08006'), true],
    ['too many connections (53300)', pgError('53300'), true],
    ['disk full (53100)', pgError('53100'), true],
    ['admin shutdown (57P01)', pgError('57P01'), true],
    ['starting up (57P03)', pgError('57P03'), true],
    ['statement timeout (57014)', pgError('57014'), true],
    ['system error (58030)', pgError('58030'), true],
    ['table not migrated yet (42P01): a mismatch, not an outage', pgError('42P01'), false],
    ['schema not migrated yet (3F000): likewise', pgError('3F000'), false],
    ['knex pool timeout', Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), { name: 'KnexTimeoutError' }), true],
    ['connection terminated, by message', new Error('Connection terminated unexpectedly'), true],
    ['wrapped in a cause', new Error('query failed', { cause: pgError('57P01') }), true],
    ['one of several connect attempts', Object.assign(new AggregateError([pgError('23505'), Object.assign(new Error('x'), { code: 'ETIMEDOUT' })]), {}), true],
    ['unique violation (23505): a conflict, not an outage', pgError('23505'), false],
    ['deadlock (40P01)', pgError('40P01'), false],
    ['bad data (22008)', pgError('22008'), false],
    ['invalid json (22P02)', pgError('22P02'), false],
    ['a programming error', new TypeError("Cannot read properties of undefined (reading 'x')"), false],
    ['not an error at all', 'ECONNREFUSED', false],
  ])('%s', (_name, err, expected) => {
    expect(isDatabaseUnavailable(err)).toBe(expected);
  });
});

describe('isStatementMismatch', () => {
  it.each([
    ['undefined table (42P01)', pgError('42P01'), true],
    ['undefined column (42703)', pgError('42703'), true],
    ['syntax error (42601)', pgError('42601'), true],
    ['missing schema (3F000)', pgError('3F000'), true],
    ['wrapped in a cause', new Error('query failed', { cause: pgError('42P01') }), true],
    ['an outage (57P01)', pgError('57P01'), false],
    ['bad data (22008)', pgError('22008'), false],
  ])('%s', (_name, err, expected) => {
    expect(isStatementMismatch(err)).toBe(expected);
  });
});
