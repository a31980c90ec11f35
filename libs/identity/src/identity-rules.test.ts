import { describe, expect, it } from '@jest/globals';
import { formatProblem } from '@svc/contracts';
import { checkIdentityRules } from './identity-rules';

describe('checkIdentityRules', () => {
  it.each([
    ['a region', { version: 1, phone: { default_region: 'GB' } }, { version: 1, phone: { default_region: 'GB' } }],
    ['no phone', { version: 1 }, { version: 1, phone: { default_region: null } }],
    ['phone null', { version: 1, phone: null }, { version: 1, phone: { default_region: null } }],
    ['region null', { version: 1, phone: { default_region: null } }, { version: 1, phone: { default_region: null } }],
    ['an empty phone object', { version: 1, phone: {} }, { version: 1, phone: { default_region: null } }],
  ])('accepts %s, normalised', (_, doc, rules) => {
    expect(checkIdentityRules(doc)).toEqual({ ok: true, rules });
  });

  const REGION = '$.phone.default_region: must be a country as an ISO 3166-1 alpha-2 code in capitals (GB, DE, IN, US), or null';
  it.each<[string, unknown, string[]]>([
    ['not an object', [], ['$: must be a JSON object with version and optionally phone']],
    ['null', null, ['$: must be a JSON object with version and optionally phone']],
    ['no version', { phone: { default_region: 'GB' } }, ['$.version: must be 1']],
    ['another version', { version: 2 }, ['$.version: must be 1']],
    ['lower case', { version: 1, phone: { default_region: 'gb' } }, [REGION]],
    ['a calling code', { version: 1, phone: { default_region: '44' } }, [REGION]],
    ['no such country', { version: 1, phone: { default_region: 'XX' } }, [REGION]],
    ['three letters', { version: 1, phone: { default_region: 'GBR' } }, [REGION]],
    ['a number', { version: 1, phone: { default_region: 44 } }, [REGION]],
    ['phone not an object', { version: 1, phone: 'GB' }, ['$.phone: must be an object {"default_region": "<ISO 3166-1 alpha-2 code>"} or null']],
    [
      'every problem at once',
      { version: 3, extra: true, phone: { default_region: 'xx', country: 'GB' } },
      ['$.extra: unknown field (allowed: version, phone)', '$.version: must be 1', '$.phone.country: unknown field (allowed: default_region)', REGION],
    ],
  ])('refuses %s with every problem', (_, doc, problems) => {
    const check = checkIdentityRules(doc);
    expect(check.ok ? [] : check.problems.map(formatProblem)).toEqual(problems);
  });
});
