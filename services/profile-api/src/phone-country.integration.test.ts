import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeWithPostgres } from '@svc/testkit';
import { ProfileApiHarness, type OrgKeys } from './test-support/harness';

/**
 * PHONE_DEFAULT_COUNTRY_CODE reaches the search: a deployment in the UK (44)
 * stores a national phone as +44..., and a search for the same national
 * number finds it. Before, the Profiles API normalised with a hard-coded 91
 * and missed it.
 */
describeWithPostgres('Profiles API: phone search with the deployment country code', () => {
  const h = new ProfileApiHarness('44');
  let A: OrgKeys;
  let profileId: string;

  beforeAll(async () => {
    await h.setUp();
    A = await h.org('UK shop');
    await h.ingest([h.envelope(A.orgId, { type: 'identify', anonymousId: 'uk-visitor', userId: 'uk-user', traits: { phone: '07700 900123' } })]);
    profileId = (await h.profileOf(A.orgId, 'phone', '+447700900123')).id;
  });
  afterAll(() => h.tearDown());

  it.each(['07700 900123', '7700900123', '+447700900123'])('finds the profile by %j', async (phone) => {
    const res = await h.get(`/search?q=${encodeURIComponent(phone)}`, A.read);
    expect(res.status).toBe(200);
    expect((res.body.profiles as Array<{ id: string }>).map((p) => p.id)).toEqual([profileId]);
  });
});
