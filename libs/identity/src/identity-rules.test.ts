import { describe, expect, it } from '@jest/globals';
import { formatProblem } from '@svc/contracts';
import { DEFAULT_IDENTITY_RULES, checkIdentityRules, compileIdentityRules } from './identity-rules';

const D = DEFAULT_IDENTITY_RULES;

describe('checkIdentityRules', () => {
  it.each([
    ['the smallest document', { version: 1 }, D],
    ['a region', { version: 1, phone: { default_region: 'GB' } }, { ...D, phone: { default_region: 'GB' } }],
    ['phone null', { version: 1, phone: null }, D],
    ['an empty phone object', { version: 1, phone: {} }, D],
    ['limits, a null one meaning none', { version: 1, limits: { user_id: 1, email: 5, phone: null, anonymous_id: 300 } }, { ...D, limits: { user_id: 1, email: 5, anonymous_id: 300 } }],
    [
      'blocked values, normalised as the signals are',
      { version: 1, blocked: [{ type: 'email', value: ' Support@Acme.IO ' }, { type: 'phone', value: '+44 20 7946 0958' }, { type: 'user_id', value: 'test-user' }] },
      { ...D, blocked: [{ type: 'email', value: 'support@acme.io' }, { type: 'phone', value: '+442079460958' }, { type: 'user_id', value: 'test-user' }] },
    ],
    ['a priority', { version: 1, priority: ['phone', 'email', 'anonymous_id'] }, { ...D, priority: ['phone', 'email', 'anonymous_id'] }],
  ])('accepts %s, normalised', (_, doc, rules) => {
    expect(checkIdentityRules(doc)).toEqual({ ok: true, rules });
  });

  const REGION = '$.phone.default_region: must be a country as an ISO 3166-1 alpha-2 code in capitals (GB, DE, IN, US), or null';
  const LIMIT = (t: string) => `$.limits.${t}: must be a whole number from 1 to 100000, or null for no limit`;
  const PRIORITY = '$.priority: must list email, phone, anonymous_id, each once, strongest first';
  it.each<[string, unknown, string[]]>([
    ['not an object', [], ['$: must be a JSON object with version and optionally phone, limits, blocked, priority']],
    ['null', null, ['$: must be a JSON object with version and optionally phone, limits, blocked, priority']],
    ['no version', { phone: { default_region: 'GB' } }, ['$.version: must be 1']],
    ['another version', { version: 2 }, ['$.version: must be 1']],
    ['a region in lower case', { version: 1, phone: { default_region: 'gb' } }, [REGION]],
    ['a calling code for a region', { version: 1, phone: { default_region: '44' } }, [REGION]],
    ['no such country', { version: 1, phone: { default_region: 'XX' } }, [REGION]],
    ['phone not an object', { version: 1, phone: 'GB' }, ['$.phone: must be an object {"default_region": "<ISO 3166-1 alpha-2 code>"} or null']],
    ['a limit of 0', { version: 1, limits: { email: 0 } }, [LIMIT('email')]],
    ['a fractional limit', { version: 1, limits: { phone: 1.5 } }, [LIMIT('phone')]],
    ['a limit past the most', { version: 1, limits: { anonymous_id: 100_001 } }, [LIMIT('anonymous_id')]],
    ['a limit of an unknown type', { version: 1, limits: { fingerprint: 2 } }, ['$.limits.fingerprint: unknown field (allowed: user_id, email, phone, anonymous_id)']],
    ['limits not an object', { version: 1, limits: [1] }, ['$.limits: must be an object of user_id, email, phone, anonymous_id to the most of each one profile may hold']],
    ['blocked not an array', { version: 1, blocked: {} }, ['$.blocked: must be an array of at most 1000 {"type", "value"} objects']],
    ['too many blocked values', { version: 1, blocked: Array.from({ length: 1001 }, (_, i) => ({ type: 'user_id', value: `u${i}` })) }, ['$.blocked: must be an array of at most 1000 {"type", "value"} objects']],
    ['an anonymousId blocked', { version: 1, blocked: [{ type: 'anonymous_id', value: 'kiosk' }] }, ['$.blocked[0].type: must be one of user_id, email, phone']],
    ['a blocked email that is none', { version: 1, blocked: [{ type: 'email', value: 'nope' }] }, ['$.blocked[0].value: must be an email address']],
    ['a blocked phone in national form', { version: 1, blocked: [{ type: 'phone', value: '020 7946 0958' }] }, ['$.blocked[0].value: must be a valid phone number in international form (+44 20 7946 0958)']],
    ['an empty blocked userId', { version: 1, blocked: [{ type: 'user_id', value: '' }] }, ['$.blocked[0].value: must be a userId of 1 to 200 characters']],
    ['a blocked entry with more', { version: 1, blocked: [{ type: 'user_id', value: 'u', why: 'test' }] }, ['$.blocked[0].why: unknown field (allowed: type, value)']],
    ['a priority missing one', { version: 1, priority: ['email', 'phone'] }, [PRIORITY]],
    ['a priority with user_id', { version: 1, priority: ['user_id', 'email', 'phone'] }, [PRIORITY]],
    ['a priority repeating one', { version: 1, priority: ['email', 'email', 'phone'] }, [PRIORITY]],
    [
      'every problem at once',
      { version: 3, extra: true, phone: { default_region: 'xx', country: 'GB' }, limits: { email: -1 }, priority: 'email' },
      ['$.extra: unknown field (allowed: version, phone, limits, blocked, priority)', '$.version: must be 1', '$.phone.country: unknown field (allowed: default_region)', REGION, LIMIT('email'), PRIORITY],
    ],
  ])('refuses %s with every problem', (_, doc, problems) => {
    const check = checkIdentityRules(doc);
    expect(check.ok ? [] : check.problems.map(formatProblem)).toEqual(problems);
  });
});

describe('compileIdentityRules', () => {
  it('reads phones in the region, else the fallback, and keys the blocked values as the signals are keyed', () => {
    const check = checkIdentityRules({ version: 1, blocked: [{ type: 'email', value: 'Support@Acme.io' }] });
    if (!check.ok) throw new Error('invalid');
    const compiled = compileIdentityRules(check.rules, '91');
    expect(compiled.phoneDefault).toBe('91');
    expect(compiled.blocked).toEqual(new Set(['email\u0000support@acme.io']));
    expect(compileIdentityRules({ ...check.rules, phone: { default_region: 'DE' } }, '91').phoneDefault).toBe('DE');
  });
});
