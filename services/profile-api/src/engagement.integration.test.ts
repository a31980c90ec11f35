import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { checkEngagementRules } from '@svc/contracts';
import { setEngagementRules } from '@svc/identity';
import { describeWithPostgres } from '@svc/testkit';
import { ProfileApiHarness, minutesAgo, type OrgKeys } from './test-support/harness';

type Item = { id: string; engagement_score: number };

/** engagement_score as the Profiles API shows it: the current value, decayed to the time of the request. */
describeWithPostgres('Profiles API engagement_score', () => {
  const h = new ProfileApiHarness();
  let D: OrgKeys;
  let N: OrgKeys;
  const ids: Record<string, string> = {};
  const DAY = 24 * 60;

  beforeAll(async () => {
    await h.setUp();
    [D, N] = [await h.org('Decays'), await h.org('No decay')];
    const rules = (halfLife: number | null) => {
      const check = checkEngagementRules({ version: 1, rules: [{ event: 'visit', points: 10 }, { event: 'click', points: 2 }], decay: halfLife === null ? null : { half_life_days: halfLife } });
      if (!check.ok) throw new Error('bad rules');
      return check.rules;
    };
    await setEngagementRules(h.db, D.orgId, rules(10));
    await setEngagementRules(h.db, N.orgId, rules(null));
    for (const org of [D, N]) {
      // old: 10 points thirty days ago (three half-lives: 1.25 now); recent: 2 points now.
      await h.ingest([
        h.envelope(org.orgId, { type: 'identify', anonymousId: 'old', userId: 'old-user', timestamp: minutesAgo(30 * DAY + 1) }),
        h.envelope(org.orgId, { type: 'track', event: 'visit', anonymousId: 'old', userId: 'old-user', timestamp: minutesAgo(30 * DAY) }),
        h.envelope(org.orgId, { type: 'identify', anonymousId: 'new', userId: 'new-user', timestamp: minutesAgo(2) }),
        h.envelope(org.orgId, { type: 'track', event: 'click', anonymousId: 'new', userId: 'new-user', timestamp: minutesAgo(1) }),
      ]);
      ids[`${org.orgId}old`] = (await h.profileOf(org.orgId, 'user_id', 'old-user')).id;
      ids[`${org.orgId}new`] = (await h.profileOf(org.orgId, 'user_id', 'new-user')).id;
    }
  });
  afterAll(() => h.tearDown());

  it('list, detail and search show the decayed score', async () => {
    const list = (await h.get('?sort_by=engagement_score&sort_order=desc', D.read)).body.profiles as Item[];
    // Stored, old is ahead (10 against 2); now, new is (2 against 1.25).
    expect(list.map((p) => p.id)).toEqual([ids[`${D.orgId}new`], ids[`${D.orgId}old`]]);
    expect(list[0]!.engagement_score).toBeCloseTo(2, 3);
    expect(list[1]!.engagement_score).toBeCloseTo(1.25, 3);
    const asc = (await h.get('?sort_by=engagement_score&sort_order=asc', D.read)).body.profiles as Item[];
    expect(asc.map((p) => p.id)).toEqual([ids[`${D.orgId}old`], ids[`${D.orgId}new`]]);

    const detail = (await h.get(`/${ids[`${D.orgId}old`]}`, D.read)).body.profile as Item;
    expect(detail.engagement_score).toBeCloseTo(1.25, 3);
    const found = (await h.get('/search?user_id=old-user', D.read)).body.profiles as Item[];
    expect(found).toHaveLength(1);
    expect(found[0]!.engagement_score).toBeCloseTo(1.25, 3);
    expect((await h.db('identity.profiles').where({ id: ids[`${D.orgId}old`] }).first()).engagement_score).toBe(10);
  });

  it('without decay the stored score is the current one', async () => {
    const list = (await h.get('?sort_by=engagement_score&sort_order=desc', N.read)).body.profiles as Item[];
    expect(list.map((p) => [p.id, p.engagement_score])).toEqual([
      [ids[`${N.orgId}old`], 10],
      [ids[`${N.orgId}new`], 2],
    ]);
    expect(((await h.get(`/${ids[`${N.orgId}new`]}`, N.read)).body.profile as Item).engagement_score).toBe(2);
  });
});
