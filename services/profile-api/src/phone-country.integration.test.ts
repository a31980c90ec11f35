import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEFAULT_IDENTITY_RULES, requestErasure, setIdentityRules } from '@svc/identity';
import { describeWithPostgres } from '@svc/testkit';
import { ProfileApiHarness, type OrgKeys } from './test-support/harness';

/**
 * A phone written without its country is read in the organisation's region
 * (its identity rules), else in the deployment's (PHONE_DEFAULT_COUNTRY_CODE,
 * 44 here), the same way by the resolver that stores it and by the Profiles
 * API that is asked for it: search and erasure find what the resolver stored.
 */
describeWithPostgres('Profiles API: phones read in the organisation’s country', () => {
  const h = new ProfileApiHarness('44');
  let uk: OrgKeys;
  let de: OrgKeys;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    await h.setUp();
    uk = await h.org('UK shop (deployment default)');
    de = await h.org('Berlin shop');
    await setIdentityRules(h.db, de.orgId, { ...DEFAULT_IDENTITY_RULES, phone: { default_region: 'DE' } });
    await h.ingest([
      h.envelope(uk.orgId, { type: 'identify', anonymousId: 'uk-visitor', userId: 'uk-user', traits: { phone: '07911 123456' } }),
      h.envelope(de.orgId, { type: 'identify', anonymousId: 'de-visitor', userId: 'de-user', traits: { phone: '030 12345678' } }),
      // The same number written internationally, by another device: the same person.
      h.envelope(de.orgId, { type: 'identify', anonymousId: 'de-phone', traits: { phone: '+49 30 1234 5678' } }),
      h.envelope(de.orgId, { type: 'identify', anonymousId: 'de-typo', traits: { phone: '030 12' } }),
    ]);
    ids.uk = (await h.profileOf(uk.orgId, 'phone', '+447911123456')).id;
    ids.de = (await h.profileOf(de.orgId, 'phone', '+493012345678')).id;
  });
  afterAll(() => h.tearDown());

  const search = async (keys: OrgKeys, phone: string) => {
    const res = await h.get(`/search?q=${encodeURIComponent(phone)}`, keys.read);
    expect(res.status).toBe(200);
    return (res.body.profiles as Array<{ id: string }>).map((p) => p.id);
  };

  describe('the deployment default where an organisation names no region', () => {
    it.each(['07911 123456', '7911123456', '+447911123456', '0044 7911 123456'])('finds the profile by %j', async (phone) => {
      expect(await search(uk, phone)).toEqual([ids.uk]);
    });
  });

  describe("the organisation's region", () => {
    it.each(['030 12345678', '+49 30 12345678', '0049 30 12345678'])('finds the profile by %j', async (phone) => {
      expect(await search(de, phone)).toEqual([ids.de]);
    });

    it('stitched the national and the international form into one profile', async () => {
      expect((await h.profileOf(de.orgId, 'anonymous_id', 'de-phone')).id).toBe(ids.de);
    });

    it('keeps a number that is not a valid one out of the signals (never guessed)', async () => {
      const phones = (await h.db('identity.identity_signals').where({ org_id: de.orgId, signal_type: 'phone' }).pluck('signal_value')) as string[];
      expect(phones).toEqual(['+493012345678']);
      expect((await h.profileOf(de.orgId, 'anonymous_id', 'de-typo')).id).not.toBe(ids.de);
    });

    it('is not another organisation’s: the UK shop reads 030 as a British number', async () => {
      expect(await search(uk, '030 12345678')).toEqual([]);
    });

    it('names the person to erase by the national number', async () => {
      const result = await requestErasure(h.db, { orgId: de.orgId, target: { kind: 'phone', value: '030 12345678' }, actor: 'test', hashes: h.hashes, defaultPhoneCountryCode: '44' });
      expect(result.outcome).toBe('recorded');
      expect(result.outcome === 'recorded' && result.erasure.profile_id).toBe(ids.de);
    });
  });
});
