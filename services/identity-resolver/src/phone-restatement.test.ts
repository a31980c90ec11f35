import { describe, expect, it } from '@jest/globals';
import { compileIdentityRules, DEFAULT_IDENTITY_RULES, normalisePhone } from '@svc/identity';
import { stalePhones } from './phone-restatement';

describe('stalePhones: the numbers a profile holds that none of its events gives today', () => {
  const inGb = compileIdentityRules({ ...DEFAULT_IDENTITY_RULES, phone: { default_region: 'GB' } }, '1');
  const read = (raw: unknown) => normalisePhone(raw, inGb.phoneDefault);

  it.each([
    ['the old reading of a national number', [{ profile_id: 'p', value: '+12079460958' }], [{ profile_id: 'p', raw: '020 7946 0958' }], ['+12079460958']],
    ['a number read the same today', [{ profile_id: 'p', value: '+442079460958' }], [{ profile_id: 'p', raw: '+44 20 7946 0958' }], []],
    ['a number only another profile’s events give', [{ profile_id: 'p', value: '+442079460958' }], [{ profile_id: 'q', raw: '020 7946 0958' }], ['+442079460958']],
    ['a number written as a JSON number, read as its text is', [{ profile_id: 'p', value: '+442079460958' }], [{ profile_id: 'p', raw: 2079460958 }], []],
    ['an unreadable number', [{ profile_id: 'p', value: '+99912345678' }], [{ profile_id: 'p', raw: '99912345678' }], ['+99912345678']],
  ])('%s', (_, held, written, stale) => {
    expect(stalePhones(held, written, read).map((h) => h.value)).toEqual(stale);
  });
});
