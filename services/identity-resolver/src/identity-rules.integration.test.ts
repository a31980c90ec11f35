import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { checkIdentityRules, readWarnings, setIdentityRules } from '@svc/identity';
import { describeWithPostgres } from '@svc/testkit';
import { Harness } from './test-support/harness';

/**
 * An organisation's identity rules on the running resolver: blocked values
 * never stitch, a limit keeps a profile from taking more identifiers or
 * merging past it, and every event is stored all the same; what the rules
 * refused is in the organisation's warnings, and no merge is journaled.
 */
describeWithPostgres('identity rules on the running resolver', () => {
  const h = new Harness();
  let org: string;
  let other: string;

  beforeAll(async () => {
    await h.setUp();
    await h.startResolver();
    [org, other] = [await h.org('With rules'), await h.org('Without')];
    const check = checkIdentityRules({ version: 1, limits: { anonymous_id: 2 }, blocked: [{ type: 'email', value: 'support@acme.io' }] });
    if (!check.ok) throw new Error('invalid rules');
    await setIdentityRules(h.db, org, check.rules);
  }, 60_000);
  afterAll(() => h.tearDown());

  it('a blocked email stitches no one, in the organisation that blocked it only', async () => {
    for (const o of [org, other]) {
      await h.ingest([
        h.envelope(o, { type: 'identify', anonymousId: 'help-desk-1', traits: { email: 'support@acme.io' }, messageId: 'm-b1' }),
        h.envelope(o, { type: 'identify', anonymousId: 'help-desk-2', traits: { email: 'Support@Acme.io' }, messageId: 'm-b2' }),
      ]);
    }
    const ids = async (o: string) => [(await h.profileBySignal(o, 'anonymous_id', 'help-desk-1'))!.id, (await h.profileBySignal(o, 'anonymous_id', 'help-desk-2'))!.id];
    const [a, b] = await ids(org);
    expect(a).not.toBe(b);
    expect(await h.profileBySignal(org, 'email', 'support@acme.io')).toBeUndefined();
    const [c, d] = await ids(other);
    expect(c).toBe(d);
  });

  it('a limit: the third device of a person is stored on them without its id, and a merge past it is refused', async () => {
    await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'laptop', userId: 'alice', messageId: 'm-1' })]);
    await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'phone', userId: 'alice', messageId: 'm-2' })]);
    // A third device, new: stored on alice, its anonymousId not attached.
    await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'tablet', userId: 'alice', messageId: 'm-3' })]);
    const alice = (await h.profileBySignal(org, 'user_id', 'alice'))!.id;
    expect((await h.event(org, 'm-3')).profile_id).toBe(alice);
    expect(await h.profileBySignal(org, 'anonymous_id', 'tablet')).toBeUndefined();
    // A device with a profile of its own: logging in would merge it past the limit.
    await h.ingest([h.envelope(org, { type: 'page', anonymousId: 'kiosk', messageId: 'm-4' })]);
    const kiosk = (await h.profileBySignal(org, 'anonymous_id', 'kiosk'))!.id;
    await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'kiosk', userId: 'alice', messageId: 'm-5' })]);
    expect((await h.event(org, 'm-5')).profile_id).toBe(alice);
    expect((await h.profileBySignal(org, 'anonymous_id', 'kiosk'))!.id).toBe(kiosk);
    expect(await h.count('select count(*) as n from identity.merges where org_id = ?', [org])).toBe(0);

    const warnings = (await readWarnings(h.db, org, { limit: 10 })).warnings.map((w) => [w.messageId, w.kind]);
    expect(warnings.slice(0, 2)).toEqual([
      ['m-5', 'merge_refused'],
      ['m-3', 'identity_limit'],
    ]);
    // The two help-desk devices are on partitions of their own: either may have been resolved first.
    expect(warnings.slice(2).sort()).toEqual([
      ['m-b1', 'blocked_identifier'],
      ['m-b2', 'blocked_identifier'],
    ]);
    expect((await readWarnings(h.db, other, { limit: 10 })).warnings).toEqual([]);
  });
});
