import { describe, expect, it } from '@jest/globals';
import { isValidIdentifier } from './identifiers';

describe('isValidIdentifier', () => {
  const rejected: Array<[string, unknown]> = [
    ['empty', ''],
    ['whitespace', '   \t'],
    ['null', 'null'],
    ['NULL upper case', 'NULL'],
    ['undefined', 'undefined'],
    ['anonymous', 'Anonymous'],
    ['guest', 'guest'],
    ['all-zero UUID', '00000000-0000-0000-0000-000000000000'],
    ['[object Object]', '[object Object]'],
    ['nan', 'NaN'],
    ['none', 'None'],
    ['0', '0'],
    ['-1', '-1'],
    ['true', 'true'],
    ['false', 'FALSE'],
    ['distinct_id', 'distinct_id'],
    ['id', 'id'],
    ['email', 'email'],
    ['not_authenticated', 'not_authenticated'],
    ['double-quoted null', '"null"'],
    ['single-quoted undefined', "'undefined'"],
    ['nested quotes', `"'guest'"`],
    ['padded', '  null  '],
    ['full-width letters (NFKC)', 'ｎｕｌｌ'],
    ['201 characters', 'a'.repeat(201)],
    ['a number', 42],
    ['an object', { id: 'x' }],
    ['null value', null],
  ];
  it.each(rejected)('rejects %s', (_name, value) => {
    expect(isValidIdentifier(value)).toBe(false);
  });

  const accepted: Array<[string, string]> = [
    ['anon_ uuid', 'anon_2f1c1a52-6a53-4f0e-9d5b-1d0c6f0d8f11'],
    ['an email-shaped user id', 'ada@example.com'],
    ['200 characters', 'a'.repeat(200)],
    ['200 astral code points', '😀'.repeat(200)],
    ['a word containing a sentinel', 'nullable-user-7'],
    ['numeric id', '12345'],
  ];
  it.each(accepted)('accepts %s', (_name, value) => {
    expect(isValidIdentifier(value)).toBe(true);
  });
});
