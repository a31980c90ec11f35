import { describe, expect, it } from '@jest/globals';
import { DEFAULT_IDENTITY_RULES, profileIdsFor, signalKey, type CompiledIdentityRules, type EventIdentity, type SignalType } from '@svc/identity';
import { IdentityGraph, type ProfileNode } from './resolve';

const ORG = '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f';

interface Stored {
  /** name → userId (null: anonymous) */
  profiles: Record<string, string | null>;
  /** [type, value, profile name] */
  signals: Array<[SignalType, string, string]>;
}

/** A graph as the loader would build it from stored rows; profiles are named for readability. */
function graphOf(stored: Stored, rules?: Pick<CompiledIdentityRules, 'limits' | 'priority'>) {
  const idOf = (name: string) => `00000000-0000-8000-8000-${name.padStart(12, '0')}`;
  const profiles = new Map<string, ProfileNode>();
  for (const [name, userId] of Object.entries(stored.profiles)) {
    profiles.set(idOf(name), { id: idOf(name), canonicalId: `prf_${name}`, userId, isNew: false, mergedInto: null });
  }
  const signals = new Map(stored.signals.map(([t, v, name]) => [signalKey(t, v), idOf(name)]));
  const counts = new Map<string, Partial<Record<SignalType, number>>>();
  for (const [t, , name] of stored.signals) counts.set(idOf(name), { ...counts.get(idOf(name)), [t]: (counts.get(idOf(name))?.[t] ?? 0) + 1 });
  const g = new IdentityGraph(ORG, signals, profiles, rules, counts);
  const nameOf = (id: string) => Object.keys(stored.profiles).find((n) => idOf(n) === id) ?? (g.created.some((c) => c.id === id) ? `new:${g.profile(id).userId ?? 'anon'}` : id);
  return { g, idOf, nameOf };
}

const id = (anonymousId: string, more: Partial<EventIdentity> = {}): EventIdentity => ({
  anonymousId,
  userId: null,
  email: null,
  phone: null,
  previousId: null,
  ...more,
});

describe('identity resolution rules', () => {
  it.each<[string, Stored, EventIdentity, { to: string; method: string; merges?: Array<[string, string, string]> }]>([
    ['unknown anonymous visitor: a new profile', { profiles: {}, signals: [] }, id('a1'), { to: 'new:anon', method: 'new_profile' }],
    ['known device', { profiles: { A: null }, signals: [['anonymous_id', 'a1', 'A']] }, id('a1'), { to: 'A', method: 'anonymous_id' }],
    [
      'anonymous profile identifies as a new user: it becomes that user',
      { profiles: { A: null }, signals: [['anonymous_id', 'a1', 'A']] },
      id('a1', { userId: 'u1' }),
      { to: 'A', method: 'anonymous_id' },
    ],
    [
      'anonymous profile identifies as a known user: joins the user',
      { profiles: { A: null, U: 'u1' }, signals: [['anonymous_id', 'a1', 'A'], ['user_id', 'u1', 'U']] },
      id('a1', { userId: 'u1' }),
      { to: 'U', method: 'user_id', merges: [['A', 'U', 'identify']] },
    ],
    [
      'shared device, new second user: a profile of their own, the first user untouched',
      { profiles: { A: 'alice' }, signals: [['anonymous_id', 'a1', 'A'], ['user_id', 'alice', 'A']] },
      id('a1', { userId: 'bob' }),
      { to: 'new:bob', method: 'new_profile' },
    ],
    [
      'shared device, known second user: their profile, no merge',
      { profiles: { A: 'alice', B: 'bob' }, signals: [['anonymous_id', 'a1', 'A'], ['user_id', 'alice', 'A'], ['user_id', 'bob', 'B']] },
      id('a1', { userId: 'bob' }),
      { to: 'B', method: 'user_id' },
    ],
    [
      'email trait stitches an anonymous device into the identified profile',
      { profiles: { A: null, U: 'u1' }, signals: [['anonymous_id', 'a2', 'A'], ['email', 'x@y.io', 'U']] },
      id('a2', { email: 'x@y.io' }),
      { to: 'U', method: 'email', merges: [['A', 'U', 'trait']] },
    ],
    [
      'an identified device with an anonymous email profile: the anonymous one joins the identified',
      { profiles: { A: 'u1', E: null }, signals: [['anonymous_id', 'a1', 'A'], ['email', 'x@y.io', 'E']] },
      id('a1', { email: 'x@y.io' }),
      { to: 'A', method: 'anonymous_id', merges: [['E', 'A', 'trait']] },
    ],
    [
      'a trait never merges two identified users',
      { profiles: { A: 'alice', W: 'walt' }, signals: [['anonymous_id', 'a1', 'A'], ['email', 'w@y.io', 'W']] },
      id('a1', { email: 'w@y.io' }),
      { to: 'W', method: 'email' },
    ],
    [
      "identify with another user's email: the user's profile, the email's owner untouched",
      { profiles: { U: 'u1', W: 'walt' }, signals: [['user_id', 'u1', 'U'], ['email', 'w@y.io', 'W']] },
      id('a9', { userId: 'u1', email: 'w@y.io' }),
      { to: 'U', method: 'user_id' },
    ],
    [
      'alias with a distinct previousId merges the previous identity into the userId profile',
      { profiles: { O: 'old', N: 'new' }, signals: [['user_id', 'old', 'O'], ['user_id', 'new', 'N'], ['anonymous_id', 'a1', 'N']] },
      id('a1', { userId: 'new', previousId: 'old' }),
      { to: 'N', method: 'user_id', merges: [['O', 'N', 'alias']] },
    ],
    [
      'alias whose previousId is an anonymous id of another profile',
      { profiles: { P: null, N: 'new' }, signals: [['anonymous_id', 'prev-anon', 'P'], ['user_id', 'new', 'N']] },
      id('a1', { userId: 'new', previousId: 'prev-anon' }),
      { to: 'N', method: 'user_id', merges: [['P', 'N', 'alias']] },
    ],
  ])('%s', (_name, stored, identity, expected) => {
    const { g, nameOf } = graphOf(stored);
    const r = g.resolveEvent(identity, 'm-1');
    expect({ to: nameOf(g.find(r.profileId)), method: r.method }).toEqual({ to: expected.to, method: expected.method });
    expect(g.merges.map((m) => [nameOf(m.sourceId), nameOf(m.targetId), m.reason])).toEqual(expected.merges ?? []);
  });

  it('shared device: the device signal stays with its first user', () => {
    const { g, idOf } = graphOf({ profiles: { A: 'alice' }, signals: [['anonymous_id', 'a1', 'A'], ['user_id', 'alice', 'A']] });
    g.resolveEvent(id('a1', { userId: 'bob' }), 'm');
    expect(g.owner('anonymous_id', 'a1')).toBe(idOf('A'));
    expect(g.owner('user_id', 'bob')).not.toBe(idOf('A'));
  });

  it('an unknown previousId becomes a user_id signal of the userId profile', () => {
    const { g, idOf } = graphOf({ profiles: { N: 'new' }, signals: [['user_id', 'new', 'N']] });
    g.resolveEvent(id('a1', { userId: 'new', previousId: 'legacy-42' }), 'm');
    expect(g.owner('user_id', 'legacy-42')).toBe(idOf('N'));
    expect(g.merges).toEqual([]);
  });

  it('within one batch: a new visitor, then their identify, is one profile', () => {
    const { g } = graphOf({ profiles: {}, signals: [] });
    const first = g.resolveEvent(id('a1'), 'm1');
    const second = g.resolveEvent(id('a1', { userId: 'u1' }), 'm2');
    expect(g.find(second.profileId)).toBe(g.find(first.profileId));
    expect(second.method).toBe('anonymous_id');
    expect(g.profile(first.profileId).userId).toBe('u1');
    expect(g.created).toHaveLength(1);
  });

  it('within one batch: two new devices identifying as one new user end as one profile', () => {
    const { g } = graphOf({ profiles: {}, signals: [] });
    const d1 = g.resolveEvent(id('d1'), 'm1');
    const d2 = g.resolveEvent(id('d2'), 'm2');
    g.resolveEvent(id('d1', { userId: 'u' }), 'm3');
    g.resolveEvent(id('d2', { userId: 'u' }), 'm4');
    expect(g.find(d1.profileId)).toBe(g.find(d2.profileId));
    expect(g.merges.map((m) => m.reason)).toEqual(['identify']);
    expect(g.owner('anonymous_id', 'd2')).toBe(g.find(d1.profileId));
  });

  it('new profiles get deterministic ids from their seed signal', () => {
    const { g } = graphOf({ profiles: {}, signals: [] });
    const r = g.resolveEvent(id('a1', { userId: 'u1' }), 'm');
    expect(r.profileId).toBe(profileIdsFor(ORG, 'user_id', 'u1').id);
    expect(g.profile(r.profileId).canonicalId).toMatch(/^prf_[0-9a-hjkmnp-tv-z]{26}$/);
  });
});

describe('identity rules', () => {
  const rules = (more: Partial<Pick<CompiledIdentityRules, 'limits' | 'priority'>>) => ({ limits: {}, priority: DEFAULT_IDENTITY_RULES.priority, ...more });

  it('priority: the phone decides over the email when the rules put it first', () => {
    const stored: Stored = { profiles: { E: 'eve', P: 'pat' }, signals: [['email', 'x@y.io', 'E'], ['phone', '+442079460958', 'P']] };
    const event = id('a1', { email: 'x@y.io', phone: '+442079460958' });
    const byDefault = graphOf(stored);
    expect(byDefault.nameOf(byDefault.g.resolveEvent(event, 'm').profileId)).toBe('E');
    const phoneFirst = graphOf(stored, rules({ priority: ['phone', 'email', 'anonymous_id'] }));
    expect(phoneFirst.nameOf(phoneFirst.g.resolveEvent(event, 'm').profileId)).toBe('P');
    // Identified profiles are never merged by a trait, whatever the order.
    expect([...byDefault.g.merges, ...phoneFirst.g.merges]).toEqual([]);
  });

  it('limits: an email over the limit is not attached, the event still goes to its profile, and it is a warning', () => {
    const { g, nameOf } = graphOf({ profiles: { A: 'alice' }, signals: [['user_id', 'alice', 'A'], ['email', 'a1@x.io', 'A'], ['email', 'a2@x.io', 'A']] }, rules({ limits: { email: 2 } }));
    const r = g.resolveEvent(id('d1', { userId: 'alice', email: 'a3@x.io' }), 'm-3');
    expect(nameOf(r.profileId)).toBe('A');
    expect(g.owner('email', 'a3@x.io')).toBeUndefined();
    expect(g.owner('anonymous_id', 'd1')).toBe(r.profileId);
    expect(g.warnings).toEqual([{ messageId: 'm-3', kind: 'identity_limit', detail: 'email: the profile holds 2, the most the rules allow' }]);
  });

  it('limits: a merge that would take the survivor over is refused and recorded, never applied', () => {
    const stored: Stored = {
      profiles: { A: 'alice', D: null },
      signals: [['user_id', 'alice', 'A'], ['anonymous_id', 'a1', 'A'], ['anonymous_id', 'a2', 'A'], ['anonymous_id', 'd1', 'D'], ['anonymous_id', 'd2', 'D']],
    };
    const { g, idOf, nameOf } = graphOf(stored, rules({ limits: { anonymous_id: 3 } }));
    const r = g.resolveEvent(id('d1', { userId: 'alice' }), 'm-login');
    expect(nameOf(r.profileId)).toBe('A');
    expect(g.merges).toEqual([]);
    expect(g.find(idOf('D'))).toBe(idOf('D'));
    expect(g.warnings).toEqual([{ messageId: 'm-login', kind: 'merge_refused', detail: `identify of ${idOf('D')} into ${idOf('A')}: together they would hold more than 3 anonymous_id` }]);
    // Within the limit the same merge goes ahead, and the counts follow it.
    const roomy = graphOf(stored, rules({ limits: { anonymous_id: 4 } }));
    roomy.g.resolveEvent(id('d1', { userId: 'alice' }), 'm-login');
    expect(roomy.g.merges.map((m) => m.reason)).toEqual(['identify']);
    roomy.g.resolveEvent(id('d3', { userId: 'alice' }), 'm-next');
    expect(roomy.g.owner('anonymous_id', 'd3')).toBeUndefined();
    expect(roomy.g.warnings.map((w) => w.kind)).toEqual(['identity_limit']);
  });

  it('limits: user_id 1 refuses an alias of two identified people', () => {
    const { g } = graphOf({ profiles: { A: 'alice', O: 'old' }, signals: [['user_id', 'alice', 'A'], ['user_id', 'old', 'O']] }, rules({ limits: { user_id: 1 } }));
    g.resolveEvent(id('d', { userId: 'alice', previousId: 'old' }), 'm-alias');
    expect(g.merges).toEqual([]);
    expect(g.warnings.map((w) => w.kind)).toEqual(['merge_refused']);
  });
});

describe('identifiers an unmerge keeps apart', () => {
  const idOf = (name: string) => `00000000-0000-8000-8000-${name.padStart(12, '0')}`;
  const apart = (a: [SignalType, string, string | null], b: [SignalType, string, string | null]) => ({
    orgId: ORG,
    a: { type: a[0], value: a[1], owner: a[2] && idOf(a[2]) },
    b: { type: b[0], value: b[1], owner: b[2] && idOf(b[2]) },
  });
  /** S holds the phone's anonymous id, U is ann's; the two are kept apart. */
  function graph() {
    const profiles = new Map<string, ProfileNode>([
      [idOf('S'), { id: idOf('S'), canonicalId: 'prf_S', userId: null, isNew: false, mergedInto: null }],
      [idOf('U'), { id: idOf('U'), canonicalId: 'prf_U', userId: 'ann', isNew: false, mergedInto: null }],
    ]);
    const signals = new Map([
      [signalKey('anonymous_id', 'phone'), idOf('S')],
      [signalKey('user_id', 'ann'), idOf('U')],
    ]);
    return new IdentityGraph(ORG, signals, profiles, DEFAULT_IDENTITY_RULES, new Map(), [apart(['anonymous_id', 'phone', 'S'], ['user_id', 'ann', 'U'])]);
  }

  it('refuses the merge that would join their holders, and says so', () => {
    const g = graph();
    expect(g.resolveEvent(id('phone', { userId: 'ann' }), 'm1')).toEqual({ profileId: idOf('U'), method: 'user_id' });
    expect(g.merges).toEqual([]);
    expect(g.warnings).toEqual([{ messageId: 'm1', kind: 'merge_refused', detail: `identify of ${idOf('S')} into ${idOf('U')}: an unmerge keeps them apart` }]);
  });

  it('refuses a merge through another identifier of the holders, which the batch did not carry', () => {
    // The event names neither kept identifier: their holders are known from the pair all the same.
    const signals = new Map([
      [signalKey('email', 'ann@example.com'), idOf('U')],
      [signalKey('anonymous_id', 'tablet'), idOf('S')],
    ]);
    const profiles = new Map<string, ProfileNode>([
      [idOf('S'), { id: idOf('S'), canonicalId: 'prf_S', userId: null, isNew: false, mergedInto: null }],
      [idOf('U'), { id: idOf('U'), canonicalId: 'prf_U', userId: 'ann', isNew: false, mergedInto: null }],
    ]);
    const g = new IdentityGraph(ORG, signals, profiles, DEFAULT_IDENTITY_RULES, new Map(), [apart(['anonymous_id', 'phone', 'S'], ['user_id', 'ann', 'U'])]);
    expect(g.resolveEvent(id('tablet', { email: 'ann@example.com' }), 'm1').profileId).toBe(idOf('U'));
    expect(g.merges).toEqual([]);
  });

  it('does not make the kept-apart anonymous profile the user: the user gets a profile of their own', () => {
    const signals = new Map([[signalKey('anonymous_id', 'phone'), idOf('S')]]);
    const profiles = new Map<string, ProfileNode>([[idOf('S'), { id: idOf('S'), canonicalId: 'prf_S', userId: null, isNew: false, mergedInto: null }]]);
    const g = new IdentityGraph(ORG, signals, profiles, DEFAULT_IDENTITY_RULES, new Map(), [apart(['anonymous_id', 'phone', 'S'], ['user_id', 'ann', null])]);
    const made = g.resolveEvent(id('phone', { userId: 'ann' }), 'm1');
    expect(made).toEqual({ profileId: profileIdsFor(ORG, 'user_id', 'ann').id, method: 'new_profile' });
    expect(g.owner('user_id', 'ann')).toBe(made.profileId);
    expect(g.owner('anonymous_id', 'phone')).toBe(idOf('S'));
    expect(g.merges).toEqual([]);
    // Another user is no concern of the pair's: the phone's profile becomes that user.
    expect(g.resolveEvent(id('phone', { userId: 'bob' }), 'm2')).toEqual({ profileId: idOf('S'), method: 'anonymous_id' });
  });

  it('does not attach an identifier to the profile holding its partner', () => {
    const signals = new Map([[signalKey('user_id', 'ann'), idOf('U')]]);
    const profiles = new Map<string, ProfileNode>([[idOf('U'), { id: idOf('U'), canonicalId: 'prf_U', userId: 'ann', isNew: false, mergedInto: null }]]);
    const g = new IdentityGraph(ORG, signals, profiles, DEFAULT_IDENTITY_RULES, new Map(), [apart(['anonymous_id', 'phone', null], ['user_id', 'ann', 'U'])]);
    expect(g.resolveEvent(id('phone', { userId: 'ann' }), 'm1')).toEqual({ profileId: idOf('U'), method: 'user_id' });
    expect(g.owner('anonymous_id', 'phone')).toBeUndefined();
    expect(g.warnings).toEqual([expect.objectContaining({ kind: 'merge_refused', detail: expect.stringContaining('anonymous_id not added') })]);
    // The next event of the phone alone makes the phone's own profile.
    expect(g.resolveEvent(id('phone'), 'm2')).toEqual({ profileId: profileIdsFor(ORG, 'anonymous_id', 'phone').id, method: 'new_profile' });
  });
});
