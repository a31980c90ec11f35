import { describe, expect, it } from '@jest/globals';
import type { RawEventEnvelope } from '@svc/contracts';
import { DEFAULT_COMPILED_RULES, DEFAULT_IDENTITY_RULES, compileIdentityRules, eventIdFor, profileIdsFor, signalLockKey, type ProfileRow, type SignalRow } from '@svc/identity';
import {
  buildGraphs,
  contactsNeeded,
  distinctEvents,
  freshEvents,
  identityLockKeys,
  outputMessages,
  planBatch,
  profilesToRescore,
  qualifyingConversions,
  usageOf,
} from './plan';

/** The batch's planning without a database: the state is what the read statement would have returned. */

const ORG = '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f';
const OTHER_ORG = '0b5e2f1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b';
const NOW = () => '2026-11-25T12:00:00.000Z';
/** Every organisation has the default identity rules: national phone numbers read as Indian (the deployment's default). */
const IN_INDIA = compileIdentityRules(DEFAULT_IDENTITY_RULES, '91');
const inIndia = () => IN_INDIA;

let seq = 0;
function envelope(event: Record<string, unknown>, orgId = ORG, receivedAt = '2026-11-25T10:00:00.000Z'): RawEventEnvelope {
  return {
    v: 1,
    orgId,
    receivedAt,
    requestId: 'req-1',
    clientIp: '203.0.113.7',
    event: { type: 'track', event: 'Viewed', messageId: `m-${++seq}`, timestamp: '2026-11-25T09:00:00.000Z', ...event },
  } as RawEventEnvelope;
}

const stored = (id: string, canonicalId: string, userId: string | null = null, mergedInto: string | null = null, orgId = ORG): ProfileRow => ({
  id,
  org_id: orgId,
  canonical_id: canonicalId,
  user_id: userId,
  merged_into: mergedInto,
});
const signal = (type: SignalRow['signal_type'], value: string, profileId: string, orgId = ORG): SignalRow => ({ org_id: orgId, signal_type: type, signal_value: value, profile_id: profileId });

const P1 = '00000000-0000-8000-8000-000000000001';
const P2 = '00000000-0000-8000-8000-000000000002';

function plan(envelopes: RawEventEnvelope[], state: { signals?: SignalRow[]; profiles?: ProfileRow[]; stored?: string[] } = {}) {
  const { events } = distinctEvents(envelopes, inIndia);
  const fresh = freshEvents(events, { stored: new Set(state.stored ?? []) });
  const graphs = buildGraphs(fresh, state.signals ?? [], state.profiles ?? [], inIndia, new Map());
  const rules = new Map([...graphs.keys()].map((orgId) => [orgId, DEFAULT_COMPILED_RULES]));
  return { fresh, plan: planBatch(fresh, graphs, rules, NOW) };
}

describe('distinctEvents', () => {
  it('keeps the first of each organisation’s messageId and counts the repeats', () => {
    const a = envelope({ messageId: 'same', anonymousId: 'a1' });
    const b = envelope({ messageId: 'same', anonymousId: 'a2' });
    const c = envelope({ messageId: 'same', anonymousId: 'a3' }, OTHER_ORG);
    const { events, repeats } = distinctEvents([a, b, c], inIndia);
    expect(events.map((e) => [e.orgId, e.identity.anonymousId])).toEqual([
      [ORG, 'a1'],
      [OTHER_ORG, 'a3'],
    ]);
    expect(repeats).toBe(1);
  });

  it('lets the read state drop the events already stored', () => {
    const { events } = distinctEvents([envelope({ messageId: 'old', anonymousId: 'a1' }), envelope({ messageId: 'new', anonymousId: 'a1' })], inIndia);
    expect(freshEvents(events, { stored: new Set([eventIdFor(ORG, 'old')]) }).map((e) => e.messageId)).toEqual(['new']);
  });
});

describe('identityLockKeys', () => {
  it('locks every signal once, an alias’s previousId as both kinds, in ascending order', () => {
    const { events } = distinctEvents([
      envelope({ type: 'alias', userId: 'u1', previousId: 'old', anonymousId: 'a1' }),
      envelope({ anonymousId: 'a1' }),
    ], inIndia);
    const keys = identityLockKeys(events);
    expect(keys).toEqual([...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(new Set(keys)).toEqual(
      new Set([
        signalLockKey(ORG, 'anonymous_id', 'a1'),
        signalLockKey(ORG, 'user_id', 'u1'),
        signalLockKey(ORG, 'user_id', 'old'),
        signalLockKey(ORG, 'anonymous_id', 'old'),
      ]),
    );
    expect(keys).toHaveLength(4);
  });
});

describe('planBatch', () => {
  it('a new visitor: one created profile, and every row of its events points at it', () => {
    const { plan: p } = plan([
      envelope({ anonymousId: 'a1', context: { session: { id: 's1' }, campaign: { source: 'news', medium: 'email', gclid: 'g-1' } }, timestamp: '2026-11-25T09:00:00.000Z' }),
      envelope({ anonymousId: 'a1', context: { session: { id: 's1' } }, timestamp: '2026-11-25T08:00:00.000Z' }),
    ]);
    const id = profileIdsFor(ORG, 'anonymous_id', 'a1').id;
    expect(p.created).toEqual([{ id, org_id: ORG, canonical_id: expect.any(String), first_seen_at: '2026-11-25T08:00:00.000Z', last_seen_at: '2026-11-25T09:00:00.000Z' }]);
    expect(p.createdChanges).toHaveLength(1);
    expect(p.merges).toEqual([]);
    expect(p.effects.events.map((e) => [e.profile_id, e.resolution_method])).toEqual([
      [id, 'new_profile'],
      [id, 'anonymous_id'],
    ]);
    expect(p.effects.signals).toEqual([expect.objectContaining({ signal_type: 'anonymous_id', signal_value: 'a1', profile_id: id, occurrence_count: 2, first_seen_at: '2026-11-25T08:00:00.000Z', last_seen_at: '2026-11-25T09:00:00.000Z' })]);
    expect(p.effects.sessions).toEqual([{ org_id: ORG, profile_id: id, session_id: 's1' }]);
    expect(p.effects.clicks).toEqual([expect.objectContaining({ click_type: 'gclid', click_id: 'g-1', profile_id: id, campaign_source: 'news', campaign_medium: 'email' })]);
    expect(p.effects.profiles).toEqual([expect.objectContaining({ id, events: 2, first_touch: expect.objectContaining({ source: 'news' }), last_touch: expect.objectContaining({ source: 'news' }) })]);
    expect([...p.madeSignals]).toHaveLength(1);
  });

  it('an identify that matches two stored anonymous profiles merges one into the other, and the events land on the survivor', () => {
    const { plan: p } = plan(
      [envelope({ type: 'identify', userId: 'u1', anonymousId: 'a1', traits: { email: 'Ann@Example.com', plan: 'pro' } })],
      { signals: [signal('anonymous_id', 'a1', P1), signal('email', 'ann@example.com', P2)], profiles: [stored(P1, 'c1'), stored(P2, 'c2')] },
    );
    expect(p.created).toEqual([]);
    expect(p.merges).toEqual([expect.objectContaining({ orgId: ORG, sourceId: P1, targetId: P2, reason: 'identify' })]);
    expect(p.effects.events[0]).toMatchObject({ profile_id: P2, resolution_method: 'email' });
    expect(p.effects.profiles).toEqual([expect.objectContaining({ id: P2, user_id: 'u1', traits: { email: 'Ann@Example.com', plan: 'pro' } })]);
    // The new user_id signal is the batch's own; the stored ones are counted where they live.
    expect(p.effects.signals.map((s) => [s.signal_type, s.profile_id])).toEqual(
      expect.arrayContaining([
        ['user_id', P2],
        ['email', P2],
      ]),
    );
  });

  it('traits reach the profile only from identify events', () => {
    const { plan: p } = plan([envelope({ anonymousId: 'a1', traits: { plan: 'free' } }), envelope({ type: 'page', anonymousId: 'a1', traits: { x: 1 } })]);
    expect(p.effects.profiles[0]!.traits).toEqual({});
  });

  it('a profile made in the batch and merged away in it is only a redirect: no created row, no merge statement', () => {
    const { plan: p } = plan([
      envelope({ anonymousId: 'a1' }),
      envelope({ type: 'alias', userId: 'u1', previousId: 'a1', anonymousId: 'a2' }),
    ]);
    expect(p.merges).toEqual([]);
    expect(p.created).toHaveLength(1);
    expect(new Set(p.profileOf)).toEqual(new Set([p.created[0]!.id]));
  });

  it('counts a fingerprint once per profile, with its first and last sighting, and rescoring names each profile once', () => {
    const context = { consent: { fingerprinting: true }, fingerprint: { hash: 'fp-1' } };
    const { plan: p } = plan([
      envelope({ anonymousId: 'a1', context, timestamp: '2026-11-25T09:00:00.000Z' }),
      envelope({ anonymousId: 'a1', context, timestamp: '2026-11-25T07:00:00.000Z' }),
    ]);
    expect(p.effects.fingerprints).toEqual([expect.objectContaining({ fingerprint_hash: 'fp-1', occurrence_count: 2, first_seen_at: '2026-11-25T07:00:00.000Z', last_seen_at: '2026-11-25T09:00:00.000Z' })]);
    expect(profilesToRescore(p.effects.fingerprints)).toEqual([{ orgId: ORG, profileId: p.profileOf[0] }]);
  });

  it('keeps organisations apart: the same anonymousId in two organisations makes two profiles', () => {
    const { plan: p } = plan([envelope({ anonymousId: 'a1' }), envelope({ anonymousId: 'a1' }, OTHER_ORG)], {
      signals: [signal('anonymous_id', 'a1', P1, OTHER_ORG)],
      profiles: [stored(P1, 'c1', null, null, OTHER_ORG)],
    });
    expect(p.created.map((c) => c.org_id)).toEqual([ORG]);
    expect(p.profileOf).toEqual([profileIdsFor(ORG, 'anonymous_id', 'a1').id, P1]);
  });
});

describe('outputs', () => {
  it('usage per organisation and month of receipt', () => {
    const { events } = distinctEvents([
      envelope({ anonymousId: 'a' }, ORG, '2026-11-30T23:59:59.000Z'),
      envelope({ anonymousId: 'a' }, ORG, '2026-12-01T00:00:00.000Z'),
      envelope({ anonymousId: 'a' }, ORG, '2026-12-02T00:00:00.000Z'),
      envelope({ anonymousId: 'a' }, OTHER_ORG, '2026-12-02T00:00:00.000Z'),
    ], inIndia);
    expect(usageOf(events).map((u) => [u.orgId, u.at.toISOString().slice(0, 7), u.count])).toEqual([
      [ORG, '2026-11', 1],
      [ORG, '2026-12', 2],
      [OTHER_ORG, '2026-12', 1],
    ]);
  });

  it('an updated change per changed profile it did not create, one row naming every event in order, a candidate per qualifying event with the profile’s contact as fallback', () => {
    const { fresh, plan: p } = plan([envelope({ event: 'purchase', anonymousId: 'a1', properties: { value: 10 } }), envelope({ anonymousId: 'a1' })], {
      signals: [signal('anonymous_id', 'a1', P1)],
      profiles: [stored(P1, 'c1')],
    });
    const qualifying = qualifyingConversions(fresh, p.profileOf, new Map([[ORG, null]]));
    expect(qualifying.map((q) => q.e.eventName)).toEqual(['purchase']);
    expect(contactsNeeded(qualifying)).toEqual([{ orgId: ORG, profileId: P1 }]);
    const out = outputMessages(p, fresh, qualifying, new Map([[P1, { email: 'known@example.com', phone: null }]]), inIndia);
    expect(out.map((m) => m.topic)).toEqual(['profilesChanges', 'eventsResolved', 'conversionsCandidates']);
    expect(out[1]!.eventIds).toEqual([eventIdFor(ORG, fresh[0]!.messageId), eventIdFor(ORG, fresh[1]!.messageId)]);
    const candidate = out[2]!.payload as { profileId: string; hashedEmail?: string | null };
    expect(candidate.profileId).toBe(P1);
    expect(JSON.stringify(candidate)).not.toContain('known@example.com');
  });

  it('no candidates where the organisation’s connectors name no conversions', () => {
    const { fresh, plan: p } = plan([envelope({ event: 'purchase', anonymousId: 'a1' })]);
    expect(qualifyingConversions(fresh, p.profileOf, new Map([[ORG, new Set<string>()]]))).toEqual([]);
  });
});
