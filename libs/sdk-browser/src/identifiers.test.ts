import { describe, expect, it } from '@jest/globals';
import { isValidIdentifier as gatewayCheck } from '@svc/contracts';
import { isAnonId, isValidIdentifier } from './identifiers';

describe('identifier screening', () => {
  const samples: unknown[] = [
    '', ' ', 'null', 'NULL', ' Null ', '"null"', "'undefined'", '`guest`', '""null""', 'anonymous', 'Guest', '[object Object]',
    '00000000-0000-0000-0000-000000000000', '0', '-1', 'true', 'nan', 'ｎｕｌｌ', 'user-42', 'u_1', 'alice@example.com',
    'x'.repeat(200), 'x'.repeat(201), '😀'.repeat(200), '😀'.repeat(201), 42, null, undefined, {}, ['a'],
  ];

  it.each(samples.map((s) => [(JSON.stringify(s) ?? String(s)).slice(0, 24), s]))('agrees with the gateway on %s', (_label, value) => {
    expect(isValidIdentifier(value)).toBe(gatewayCheck(value));
  });

  it('rejects the sentinels the spec names and accepts real ids', () => {
    for (const bad of ['', 'null', '[object Object]', 'undefined', 'anonymous', 'guest']) expect(isValidIdentifier(bad)).toBe(false);
    expect(isValidIdentifier('user_8f2c')).toBe(true);
  });
});

describe('isAnonId', () => {
  it('accepts anon_<uuid v1-8> only', () => {
    expect(isAnonId('anon_3b241101-e2bb-4255-8caf-4136c566a962')).toBe(true);
    expect(isAnonId('anon_3B241101-E2BB-4255-8CAF-4136C566A962')).toBe(true);
    expect(isAnonId('anon_00000000-0000-0000-0000-000000000000')).toBe(false);
    expect(isAnonId('3b241101-e2bb-4255-8caf-4136c566a962')).toBe(false);
    expect(isAnonId('anon_3b241101-e2bb-4255-8caf-4136c566a962x')).toBe(false);
    expect(isAnonId('anon_not-a-uuid')).toBe(false);
    expect(isAnonId(null)).toBe(false);
  });
});
