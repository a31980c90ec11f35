import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DLQ_REASON_HEADER, DLQ_SOURCE_HEADER, deadLetterTopicFor, type IncomingMessage } from '@svc/bus';
import type { RawEventEnvelope, RawEventSealed } from '@svc/contracts';
import { DEGRADED } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { describeWithPostgres } from '@svc/testkit';
import { MasterKeyRing, resolveProfileId } from '@svc/identity';
import { createResolverHandler } from './resolver';
import { Harness, minutesAgo, type ProfileRow } from './test-support/harness';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * The resolver on real parts: raw envelopes produced to the Postgres-backed
 * log, consumed by a running resolver into PostgreSQL, outputs read back from
 * the log. Each test has an organisation of its own.
 */
describeWithPostgres('identity resolver on PostgreSQL and the Postgres-backed log', () => {
  const h = new Harness();
  let resolved: Array<IncomingMessage<Record<string, unknown>>>;
  let changes: Array<IncomingMessage<Record<string, unknown>>>;
  let candidates: Array<IncomingMessage<Record<string, unknown>>>;
  let dlq: Array<IncomingMessage<Record<string, unknown>>>;

  beforeAll(async () => {
    await h.setUp();
    await h.startResolver();
    resolved = await h.collect(h.topics.eventsResolved);
    changes = await h.collect(h.topics.profilesChanges);
    candidates = await h.collect(h.topics.conversionsCandidates);
    dlq = await h.collect(deadLetterTopicFor(h.topics.eventsRaw));
  });
  afterAll(() => h.tearDown());

  const live = async (org: string) => (await h.liveProfiles(org)).length;
  const mergesOf = (org: string) => h.db('identity.merges').where({ org_id: org }).orderBy('id') as Promise<Array<{ source_profile_id: string; target_profile_id: string; reason: string; actor: string }>>;
  const need = async (org: string, type: string, value: string): Promise<ProfileRow> => {
    const p = await h.profileBySignal(org, type, value);
    if (!p) throw new Error(`no profile has ${type} ${value}`);
    return p;
  };

  describe('identity rules', () => {
    it('an anonymous visitor who identifies stays one profile, now identified', async () => {
      const org = await h.org();
      const page = h.envelope(org, { type: 'page', anonymousId: 'd1', timestamp: minutesAgo(10), context: { session: { id: 's1' } } });
      await h.ingest([page]);
      const anonymous = await need(org, 'anonymous_id', 'd1');
      expect(anonymous).toMatchObject({ user_id: null, identified: false, event_count: 1, session_count: 1 });
      expect(anonymous.canonical_id).toMatch(/^prf_[0-9a-z]{26}$/);
      expect((await h.event(org, page.event.messageId)).resolution_method).toBe('new_profile');

      const identify = h.envelope(org, {
        type: 'identify',
        anonymousId: 'd1',
        userId: 'alice',
        traits: { email: ' Alice@Example.com ', phone: '98765 43210', name: 'Alice' },
        timestamp: minutesAgo(9),
        context: { session: { id: 's1' } },
      });
      await h.ingest([identify]);
      const alice = await need(org, 'user_id', 'alice');
      expect(alice).toMatchObject({ id: anonymous.id, canonical_id: anonymous.canonical_id, user_id: 'alice', identified: true, event_count: 2, session_count: 1, traits: { name: 'Alice' } });
      expect((await need(org, 'email', 'alice@example.com')).id).toBe(alice.id);
      expect((await need(org, 'phone', '+919876543210')).id).toBe(alice.id);
      expect(await h.event(org, identify.event.messageId)).toMatchObject({ event_name: '$identify', resolution_method: 'anonymous_id', profile_id: alice.id });
      expect(await live(org)).toBe(1);
      const signals = await h.db('identity.identity_signals').where({ org_id: org }).orderBy('signal_type');
      expect(signals.map((s: { signal_type: string; confidence: number; occurrence_count: number }) => [s.signal_type, s.confidence, s.occurrence_count])).toEqual([
        ['anonymous_id', 0.6, 2],
        ['email', 0.9, 1],
        ['phone', 0.8, 1],
        ['user_id', 1, 1],
      ]);
    });

    it('two devices identified as the same user end as one profile', async () => {
      const org = await h.org();
      const first = h.envelope(org, { type: 'identify', anonymousId: 'laptop', userId: 'bob', timestamp: minutesAgo(30) });
      await h.ingest([first]);
      await h.ingest([h.envelope(org, { type: 'page', anonymousId: 'phone', timestamp: minutesAgo(20) })]);
      const bob = await need(org, 'user_id', 'bob');
      const phone = await need(org, 'anonymous_id', 'phone');
      expect(phone.id).not.toBe(bob.id);

      const identify = h.envelope(org, { type: 'identify', anonymousId: 'phone', userId: 'bob', timestamp: minutesAgo(10) });
      await h.ingest([identify]);
      expect(await live(org)).toBe(1);
      const survivor = await need(org, 'anonymous_id', 'phone');
      expect(survivor).toMatchObject({ id: bob.id, event_count: 3 });
      expect(survivor.first_seen_at).toEqual(new Date(first.event.timestamp));
      expect(survivor.last_seen_at).toEqual(new Date(identify.event.timestamp));
      expect((await h.events(org)).every((e) => e.profile_id === bob.id)).toBe(true);
      expect((await h.event(org, identify.event.messageId)).resolution_method).toBe('user_id');
      expect(await h.db('identity.profiles').where({ id: phone.id }).first()).toMatchObject({ merged_into: bob.id });
      expect(await mergesOf(org)).toEqual([expect.objectContaining({ source_profile_id: phone.id, target_profile_id: bob.id, reason: 'identify', actor: 'identity-resolver' })]);
      expect(await resolveProfileId(h.db, org, phone.id)).toBe(bob.id);
      expect(await resolveProfileId(h.db, org, phone.canonical_id)).toBe(bob.id);
    });

    it('shared device: the second user gets their own profile and the first is never merged into them', async () => {
      const org = await h.org();
      await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'kiosk', userId: 'ann', timestamp: minutesAgo(30) })]);
      const ann = await need(org, 'user_id', 'ann');
      const asBen = h.envelope(org, { type: 'identify', anonymousId: 'kiosk', userId: 'ben', timestamp: minutesAgo(20) });
      const bensTrack = h.envelope(org, { type: 'track', event: 'Viewed', anonymousId: 'kiosk', userId: 'ben', timestamp: minutesAgo(19) });
      await h.ingest([asBen, bensTrack]);
      const ben = await need(org, 'user_id', 'ben');
      expect(ben.id).not.toBe(ann.id);
      expect(await h.event(org, asBen.event.messageId)).toMatchObject({ profile_id: ben.id, resolution_method: 'new_profile' });
      expect(await h.event(org, bensTrack.event.messageId)).toMatchObject({ profile_id: ben.id, resolution_method: 'user_id' });
      expect(await need(org, 'user_id', 'ann')).toMatchObject({ id: ann.id, merged_into: null, user_id: 'ann', event_count: 1 });
      expect(await need(org, 'user_id', 'ben')).toMatchObject({ merged_into: null, user_id: 'ben', event_count: 2 });
      // The device stays with the user who identified on it first.
      expect((await need(org, 'anonymous_id', 'kiosk')).id).toBe(ann.id);
      expect(await mergesOf(org)).toEqual([]);
      expect(await live(org)).toBe(2);
    });

    it('alias with a distinct previousId merges the previous identity into the userId profile', async () => {
      const org = await h.org();
      await h.ingest([
        h.envelope(org, { type: 'identify', anonymousId: 'old-device', userId: 'legacy-7', timestamp: minutesAgo(50), context: { campaign: { source: 'first' } } }),
        h.envelope(org, { type: 'identify', anonymousId: 'new-device', userId: 'user-7', timestamp: minutesAgo(40) }),
      ]);
      const old = await need(org, 'user_id', 'legacy-7');
      const current = await need(org, 'user_id', 'user-7');
      const alias = h.envelope(org, { type: 'alias', anonymousId: 'new-device', userId: 'user-7', previousId: 'legacy-7', timestamp: minutesAgo(30) });
      await h.ingest([alias]);
      expect(await live(org)).toBe(1);
      expect(await need(org, 'user_id', 'legacy-7')).toMatchObject({ id: current.id, user_id: 'user-7', event_count: 3, first_touch: { source: 'first' } });
      expect(await h.event(org, alias.event.messageId)).toMatchObject({ event_name: '$alias', profile_id: current.id, resolution_method: 'user_id' });
      expect(await mergesOf(org)).toEqual([expect.objectContaining({ source_profile_id: old.id, target_profile_id: current.id, reason: 'alias' })]);
      expect(await resolveProfileId(h.db, org, old.canonical_id)).toBe(current.id);
    });

    it('a self-alias, or a previousId equal to the anonymousId, is ordinary resolution with no merge', async () => {
      const org = await h.org();
      await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'd1', userId: 'sam', timestamp: minutesAgo(30) })]);
      await h.ingest([h.envelope(org, { type: 'page', anonymousId: 'd2', timestamp: minutesAgo(29) })]);
      const sam = await need(org, 'user_id', 'sam');
      const d2 = await need(org, 'anonymous_id', 'd2');
      await h.ingest([
        h.envelope(org, { type: 'alias', anonymousId: 'd1', userId: 'sam', previousId: 'sam', timestamp: minutesAgo(20) }),
        h.envelope(org, { type: 'alias', anonymousId: 'd1', userId: 'sam', previousId: 'd1', timestamp: minutesAgo(19) }),
      ]);
      // previousId = anonymousId on an anonymous device: it is identified, nothing is merged.
      await h.ingest([h.envelope(org, { type: 'alias', anonymousId: 'd2', userId: 'tom', previousId: 'd2', timestamp: minutesAgo(18) })]);
      expect(await need(org, 'user_id', 'sam')).toMatchObject({ id: sam.id, event_count: 3 });
      expect(await need(org, 'user_id', 'tom')).toMatchObject({ id: d2.id, event_count: 2 });
      expect(await mergesOf(org)).toEqual([]);
      expect(await live(org)).toBe(2);
    });

    it('group is stored as $group and associates nothing', async () => {
      const org = await h.org();
      await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'd1', userId: 'gina', traits: { email: 'sales@acme.test' }, timestamp: minutesAgo(30) })]);
      const group = h.envelope(org, { type: 'group', anonymousId: 'd9', groupId: 'acme', traits: { email: 'sales@acme.test', name: 'Acme' }, timestamp: minutesAgo(20) });
      await h.ingest([group]);
      const stored = await h.event(org, group.event.messageId);
      expect(stored).toMatchObject({ event_name: '$group', resolution_method: 'new_profile' });
      expect(stored.profile_id).not.toBe((await need(org, 'user_id', 'gina')).id);
      expect(await need(org, 'email', 'sales@acme.test')).toMatchObject({ user_id: 'gina' });
      expect(await mergesOf(org)).toEqual([]);
      expect(await live(org)).toBe(2);
    });

    it('an email trait stitches an anonymous profile into the identified one', async () => {
      const org = await h.org();
      await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'd1', userId: 'eve', traits: { email: 'eve@example.com' }, timestamp: minutesAgo(30) })]);
      await h.ingest([h.envelope(org, { type: 'page', anonymousId: 'd2', timestamp: minutesAgo(25) })]);
      const eve = await need(org, 'user_id', 'eve');
      const d2 = await need(org, 'anonymous_id', 'd2');
      const trait = h.envelope(org, { type: 'identify', anonymousId: 'd2', traits: { email: ' EVE@example.com' }, timestamp: minutesAgo(20) });
      await h.ingest([trait]);
      expect(await h.event(org, trait.event.messageId)).toMatchObject({ profile_id: eve.id, resolution_method: 'email' });
      expect(await need(org, 'anonymous_id', 'd2')).toMatchObject({ id: eve.id, event_count: 3 });
      expect(await mergesOf(org)).toEqual([expect.objectContaining({ source_profile_id: d2.id, target_profile_id: eve.id, reason: 'trait' })]);
      expect(await live(org)).toBe(1);
    });

    it('a trait never merges two identified users', async () => {
      const org = await h.org();
      await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'd1', userId: 'fay', traits: { email: 'fay@example.com' }, timestamp: minutesAgo(30) })]);
      await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'd2', userId: 'gus', timestamp: minutesAgo(29) })]);
      const fay = await need(org, 'user_id', 'fay');
      const gus = await need(org, 'user_id', 'gus');
      const claim = h.envelope(org, { type: 'identify', anonymousId: 'd2', userId: 'gus', traits: { email: 'fay@example.com' }, timestamp: minutesAgo(20) });
      await h.ingest([claim]);
      expect(await h.event(org, claim.event.messageId)).toMatchObject({ profile_id: gus.id });
      expect((await need(org, 'email', 'fay@example.com')).id).toBe(fay.id);
      expect(await mergesOf(org)).toEqual([]);
      expect(await live(org)).toBe(2);
    });
  });

  describe('exactly-once effects', () => {
    it('a redelivered envelope, or a whole batch consumed again, changes nothing', async () => {
      const org = await h.org();
      const batch = [
        h.envelope(org, { type: 'page', anonymousId: 'r1', timestamp: minutesAgo(5), context: { session: { id: 'sx' }, campaign: { gclid: 'G-r' } } }),
        h.envelope(org, { type: 'identify', anonymousId: 'r1', userId: 'rita', traits: { email: 'rita@example.com' }, timestamp: minutesAgo(4) }),
        h.envelope(org, { type: 'track', event: 'purchase', anonymousId: 'r1', properties: { value: 5 }, timestamp: minutesAgo(3) }),
      ];
      const ids = await h.ingest(batch);
      await h.waitFor('the outbox to drain', async () => (await h.count('select count(*) as n from identity.outbox', [])) === 0);
      const snapshot = async () => ({
        profiles: await h.db('identity.profiles').where({ org_id: org }).orderBy('id'),
        signals: await h.db('identity.identity_signals').where({ org_id: org }).orderBy(['signal_type', 'signal_value']),
        sessions: await h.db('identity.profile_sessions').where({ org_id: org }),
        clicks: await h.db('identity.click_ids').where({ org_id: org }),
        usage: await new AccountsStore(h.db).monthlyUsage(org, new Date()),
        outboxIds: await h.outboxSequence(),
      });
      const before = await snapshot();
      expect(before.usage).toBe(3);

      // Consumed again through the handler, exactly as the bus would redeliver it.
      const handler = createResolverHandler({ db: h.db, bus: h.bus, topics: h.topics, logger: h.logger, keys: h.keyReader(), batch: { hashes: h.hashes } });
      const redelivery = batch.map((value, i): IncomingMessage<RawEventEnvelope> => ({
        topic: h.topics.eventsRaw.name,
        partition: 0,
        offset: String(i),
        key: `${org}:r1`,
        value,
        headers: {},
        timestamp: new Date(),
      }));
      await handler({ topic: h.topics.eventsRaw.name, partition: 0, messages: redelivery });
      await handler({ topic: h.topics.eventsRaw.name, partition: 0, messages: [redelivery[1]!, redelivery[1]!] });
      expect(await snapshot()).toEqual(before);

      // And produced to the log again (a gateway retry), followed by a new event on the same key.
      await h.produce(batch);
      const [sentinel] = await h.ingest([h.envelope(org, { type: 'page', anonymousId: 'r1', timestamp: minutesAgo(1) })]);
      const after = await snapshot();
      expect(after.usage).toBe(4);
      expect(after.profiles).toHaveLength(1);
      expect(after.profiles[0]).toMatchObject({ event_count: 4, session_count: 1 });
      expect(await h.count('select count(*) as n from identity.events where org_id = ?', [org])).toBe(4);
      await h.waitFor('the sentinel on events.resolved', () => resolved.some((m) => m.value.messageId === sentinel));
      for (const id of ids) expect(resolved.filter((m) => m.value.messageId === id)).toHaveLength(1);
      expect(candidates.filter((m) => m.value.orgId === org)).toHaveLength(1);
    });
  });

  describe('attribution', () => {
    it('orders touches by event time, keeps click IDs and counts sessions and fingerprints', async () => {
      const org = await h.org();
      const granted = (hash: string) => ({ consent: { fingerprinting: true }, fingerprint: { hash, components: { tz: 'x' } } });
      const e1 = h.envelope(org, { type: 'page', anonymousId: 'a1', timestamp: minutesAgo(60), context: { campaign: { source: 'google', medium: 'cpc', name: 'spring', gclid: 'G-1' }, session: { id: 's1' }, ...granted('fp-1') } });
      await h.ingest([
        e1,
        h.envelope(org, { type: 'page', anonymousId: 'a1', timestamp: minutesAgo(30), context: { campaign: { source: 'newsletter', medium: 'email', name: 'may' }, session: { id: 's1' }, ...granted('fp-1') } }),
      ]);
      let p = await need(org, 'anonymous_id', 'a1');
      expect(p.first_touch).toEqual({ source: 'google', medium: 'cpc', campaign: 'spring', at: new Date(e1.event.timestamp).toISOString() });
      expect(p.last_touch).toMatchObject({ source: 'newsletter', medium: 'email', campaign: 'may' });

      // A late event, older than the first touch, becomes the first touch; the last touch stays.
      const late = h.envelope(org, { type: 'page', anonymousId: 'a1', timestamp: minutesAgo(120), context: { campaign: { source: 'facebook', medium: 'paid', fbclid: 'F-1' }, session: { id: 's0' }, ...granted('fp-2') } });
      const noConsent = h.envelope(org, { type: 'page', anonymousId: 'a1', timestamp: minutesAgo(25), context: { fingerprint: { hash: 'fp-3' }, session: { id: 's1' } } });
      await h.ingest([late, noConsent]);
      p = await need(org, 'anonymous_id', 'a1');
      expect(p.first_touch).toMatchObject({ source: 'facebook', medium: 'paid', campaign: null });
      expect(Date.parse(p.first_touch!.at as string)).toBe(Date.parse(late.event.timestamp));
      expect(p.last_touch).toMatchObject({ source: 'newsletter' });
      expect(new Date(p.first_seen_at).toISOString()).toBe(new Date(late.event.timestamp).toISOString());
      expect(p).toMatchObject({ event_count: 4, session_count: 2 });

      // The latest event by event time takes the last touch.
      await h.ingest([h.envelope(org, { type: 'page', anonymousId: 'a1', timestamp: minutesAgo(5), context: { campaign: { msclkid: 'M-1' } } })]);
      p = await need(org, 'anonymous_id', 'a1');
      expect(p.last_touch).toMatchObject({ source: 'bing', medium: 'cpc' });

      const clicks = await h.db('identity.click_ids').where({ org_id: org }).orderBy('click_type');
      expect(clicks).toEqual([
        expect.objectContaining({ click_type: 'fbclid', click_id: 'F-1', profile_id: p.id, campaign_source: 'facebook', campaign_medium: 'paid', first_seen_at: new Date(late.event.timestamp) }),
        expect.objectContaining({ click_type: 'gclid', click_id: 'G-1', campaign_source: 'google', campaign_medium: 'cpc' }),
        expect.objectContaining({ click_type: 'msclkid', click_id: 'M-1', campaign_source: 'bing', campaign_medium: 'cpc' }),
      ]);
      const fps = await h.db('identity.fingerprints').where({ org_id: org }).orderBy('fingerprint_hash');
      expect(fps.map((f: { fingerprint_hash: string; occurrence_count: number; stability_score: number }) => [f.fingerprint_hash, f.occurrence_count, Number(f.stability_score.toFixed(3))])).toEqual([
        ['fp-1', 2, 0.667],
        ['fp-2', 1, 0.333],
      ]);
      expect((await h.event(org, noConsent.event.messageId)).context).not.toHaveProperty('fingerprint');
      expect((await h.event(org, noConsent.event.messageId)).context).toMatchObject({ ip_address: '203.0.113.7' });
    });
  });

  describe('outputs', () => {
    it('emits events.resolved, profiles.changes and qualifying conversions.candidates with hashed PII only', async () => {
      const org = await h.org();
      const identify = h.envelope(org, { type: 'identify', anonymousId: 'o1', userId: 'olive', traits: { email: ' Olive@Example.com', phone: '+1 650 555 1234' }, timestamp: minutesAgo(10) });
      const purchase = h.envelope(org, { type: 'track', event: 'purchase', anonymousId: 'o1', properties: { value: '49.5', currency: 'usd', order_id: 'o-1' }, timestamp: minutesAgo(9), context: { user_agent: 'UA/1', page: { url: 'https://shop.test/thanks' } } });
      const notOne = h.envelope(org, { type: 'track', event: 'Purchase Completed', anonymousId: 'o1', properties: { value: 10 }, timestamp: minutesAgo(8) });
      const badValue = h.envelope(org, { type: 'track', event: '$add_to_cart', anonymousId: 'o1', properties: { value: 'lots' }, timestamp: minutesAgo(7) });
      const signUp = h.envelope(org, { type: 'track', event: 'sign_up', anonymousId: 'o1', properties: { value: 1e13 }, timestamp: minutesAgo(6) });
      await h.ingest([identify, purchase, notOne, badValue, signUp]);
      await h.ingest([h.envelope(org, { type: 'page', anonymousId: 'o2', timestamp: minutesAgo(5) })]);
      const second = await need(org, 'anonymous_id', 'o2');
      await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'o2', userId: 'olive', timestamp: minutesAgo(4) })]);
      const olive = await need(org, 'user_id', 'olive');
      const all = await h.events(org);
      expect(all).toHaveLength(7);

      const mine = (list: typeof resolved) => list.filter((m) => m.value.orgId === org);
      await h.waitFor('every output', () => mine(resolved).length === 7 && mine(candidates).length === 3 && mine(changes).some((c) => c.value.change === 'merged'));
      expect(mine(resolved).map((m) => m.value.messageId).sort()).toEqual(all.map((e) => e.message_id).sort());
      const resolvedPurchase = mine(resolved).find((m) => m.value.messageId === purchase.event.messageId)!;
      expect(resolvedPurchase.key).toBe(olive.id);
      expect(resolvedPurchase.value).toMatchObject({ v: 1, profileId: olive.id, eventName: 'purchase', resolutionMethod: 'anonymous_id', properties: { value: '49.5' } });

      const byName = Object.fromEntries(mine(candidates).map((c) => [c.value.eventName, c.value]));
      expect(Object.keys(byName).sort()).toEqual(['$add_to_cart', 'purchase', 'sign_up']);
      expect(byName.purchase).toMatchObject({
        profileId: olive.id,
        messageId: purchase.event.messageId,
        value: 49.5,
        currency: 'USD',
        orderId: 'o-1',
        hashedEmail: sha('olive@example.com'),
        hashedPhone: sha('+16505551234'),
        clientIp: '203.0.113.7',
        userAgent: 'UA/1',
        pageUrl: 'https://shop.test/thanks',
      });
      expect(byName.$add_to_cart).toMatchObject({ value: null, currency: 'INR', hashedEmail: sha('olive@example.com') });
      expect(byName.sign_up).toMatchObject({ value: null, currency: 'INR' });
      expect(JSON.stringify(mine(candidates))).not.toMatch(/olive@|Olive@|650 555|6505551234"/i);
      expect(all.find((e) => e.message_id === badValue.event.messageId)).toBeDefined();

      // The relay produces after the commit: wait for the last of them rather than race it.
      await h.waitFor('the update of the surviving profile relayed', () => mine(changes).some((c) => c.value.change === 'updated' && c.value.profileId === olive.id));
      const kinds = mine(changes).map((c) => [c.value.change, c.value.profileId, c.value.mergedInto]);
      expect(kinds).toContainEqual(['created', olive.id, undefined]);
      expect(kinds).toContainEqual(['created', second.id, undefined]);
      expect(kinds).toContainEqual(['merged', second.id, olive.id]);
      expect(kinds).toContainEqual(['updated', olive.id, undefined]);
    });
  });

  describe('outbox relay', () => {
    it('relays an event it committed from memory exactly as one it reads back from the database', async () => {
      const org = await h.org();
      const event = h.envelope(org, {
        type: 'track',
        event: 'checkout',
        anonymousId: 'mem-1',
        timestamp: minutesAgo(2),
        properties: { total: 12.5, items: [{ sku: 'a', qty: 2 }], note: 'ünïcode ✓' },
        context: { page: { url: 'https://shop.test/c' }, campaign: { source: 'news', gclid: 'g-1' } },
      });
      await h.ingest([event]);
      const ofEvent = () => resolved.filter((m) => m.value.messageId === event.event.messageId);
      await h.waitFor('the event relayed from memory', () => ofEvent().length === 1);
      // The same event's row again: the relay has forgotten it once relayed, so it reads it back.
      const [stored] = await h.events(org);
      await h.db.raw(`insert into identity.outbox (topic, event_id) values ('eventsResolved', ?)`, [stored!.id]);
      await h.waitFor('the event relayed from the database', () => ofEvent().length === 2);
      const [fromMemory, fromDatabase] = ofEvent();
      expect(fromMemory!.key).toBe(fromDatabase!.key);
      expect(fromMemory!.value).toEqual(fromDatabase!.value);
      expect(fromDatabase!.value).toMatchObject({ eventId: stored!.id, eventName: 'checkout', properties: { total: 12.5, note: 'ünïcode ✓' } });
    });

    it("parks a message its topic's schema refuses on that topic's DLQ, with the reason, and relays the rest", async () => {
      const org = await h.org();
      const parked = await h.collect(deadLetterTopicFor(h.topics.profilesChanges));
      const [bad, good] = [randomUUID(), randomUUID()];
      // Written around writeOutbox (which checks payloads): no `at`.
      await h.db.raw(
        `insert into identity.outbox (topic, message_key, payload) values ('profilesChanges', ?, ?::jsonb), ('profilesChanges', ?, ?::jsonb)`,
        [bad, JSON.stringify({ v: 1, orgId: org, profileId: bad, change: 'created' }), good, JSON.stringify({ v: 1, orgId: org, profileId: good, change: 'created', at: new Date().toISOString() })],
      );
      await h.waitFor('the good message relayed and the bad one parked', () =>
        changes.some((m) => m.value.profileId === good) && parked.some((m) => m.value.profileId === bad),
      );
      expect(changes.some((m) => m.value.profileId === bad)).toBe(false);
      expect(parked.find((m) => m.value.profileId === bad)!.headers[DLQ_REASON_HEADER]).toMatch(/^profilesChanges payload .*at/);
      await h.waitFor('the outbox emptied', async () => (await h.db('identity.outbox').whereIn('message_key', [bad, good]).count({ n: '*' }))[0]?.n == 0);
    });
  });

  describe('bad input', () => {
    it('dead-letters a poison event with the reason and keeps its partition flowing', async () => {
      const org = await h.org();
      const good1 = h.envelope(org, { type: 'page', anonymousId: 'p1', timestamp: minutesAgo(3) });
      // Valid for the schema, but no PostgreSQL timestamp: it can never be stored.
      const poison = h.envelope(org, { type: 'page', anonymousId: 'p1', timestamp: '0000-01-01T00:00:00Z' });
      const good2 = h.envelope(org, { type: 'page', anonymousId: 'p1', timestamp: minutesAgo(2) });
      await h.produce([good1, poison, good2]);
      await h.waitForStored(org, [good1.event.messageId, good2.event.messageId]);
      await h.waitFor('the dead-lettered event', async () => (await h.findEvent(dlq, poison.event.messageId)) !== undefined);
      const parked = (await h.findEvent(dlq, poison.event.messageId))!;
      // Parked as it was in the log: sealed, under its key.
      expect(parked.key).toBe(`${org}:${(parked.value as RawEventSealed).keyId}`);
      expect(parked.headers[DLQ_REASON_HEADER]).toBe('identity-resolver: SQLSTATE 22008: date/time field value out of range: "0000-01-01T00:00:00.000Z"');
      expect(parked.headers[DLQ_SOURCE_HEADER]).toMatch(new RegExp(`^${h.topics.eventsRaw.name.replace(/\./g, '\\.')}/\\d+/\\d+$`));
      expect(await h.count('select count(*) as n from identity.events where org_id = ?', [org])).toBe(2);
      expect(await new AccountsStore(h.db).monthlyUsage(org, new Date())).toBe(2);
      await h.ingest([h.envelope(org, { type: 'page', anonymousId: 'p1', timestamp: minutesAgo(1) })]);
    });
  });
});

describeWithPostgres('identity resolver without the master key of the log\'s keys', () => {
  const h = new Harness();
  afterAll(() => h.tearDown());

  it('dead-letters nothing and takes nothing for erased: it retries until a resolver with the key stores the events', async () => {
    await h.setUp();
    const dlq = await h.collect(deadLetterTopicFor(h.topics.eventsRaw));
    const wrong = await h.startResolver({ masterKeys: new MasterKeyRing(randomBytes(32)) });
    const org = await h.org();
    const events = [1, 2].map((n) => h.envelope(org, { type: 'page', anonymousId: `keyless-${n}`, timestamp: minutesAgo(n) }));
    await h.produce(events);
    await h.waitFor('a batch handed back as unavailable', async () => ((await wrong.metrics.batchFailures.get()).values.find((v) => v.labels.kind === 'unavailable')?.value ?? 0) > 0);
    expect((await wrong.metrics.events.get()).values.find((v) => v.labels.outcome === 'erased')?.value ?? 0).toBe(0);
    await wrong.stop();
    expect(dlq).toEqual([]);
    expect(await h.count('select count(*) as n from identity.events where org_id = ?', [org])).toBe(0);
    // The same log under a resolver that holds the key: every event stored.
    await h.startResolver();
    await h.waitForStored(org, events.map((e) => e.event.messageId));
    expect(dlq).toEqual([]);
  });
});

describeWithPostgres('identity resolver: only an event proven bad is dead-lettered', () => {
  const h = new Harness();
  let dlq: Array<IncomingMessage<Record<string, unknown>>>;
  /** A stand-in for a bug of the resolver's own: the connector look-up throws while `broken` is set. */
  let broken = true;
  /** The same bug, gone after this many more look-ups (one per transaction attempt). */
  let failingLookUps = 0;
  let resolver: Awaited<ReturnType<Harness['startResolver']>>;

  beforeAll(async () => {
    await h.setUp();
    resolver = await h.startResolver({
      poisonAttempts: 1,
      batch: {
        conversionNames: async () => {
          if (failingLookUps > 0) failingLookUps--;
          else if (!broken) return null;
          throw new TypeError("Cannot read properties of undefined (reading 'names')");
        },
      },
    });
    dlq = await h.collect(deadLetterTopicFor(h.topics.eventsRaw));
  });
  afterAll(() => h.tearDown());

  it('a failure of its own dead-letters nothing: retried after the back-off, counted, readiness degraded; stored once fixed', async () => {
    const org = await h.org();
    const events = [1, 2, 3].map((n) => h.envelope(org, { type: 'page', anonymousId: `bug-${n}`, timestamp: minutesAgo(n) }));
    await h.produce(events);
    await h.waitFor('a batch handed back unproven', async () => ((await resolver.metrics.batchFailures.get()).values.find((v) => v.labels.kind === 'unproven')?.value ?? 0) > 0);
    expect(resolver.stalls.stalled).toBeGreaterThan(0);
    expect(await resolver.stalls.readinessCheck()).toBe(DEGRADED);
    expect(dlq).toEqual([]);

    broken = false;
    // The bus delivers the batch again after its back-off (up to 5 s), whatever the load.
    await h.waitForStored(org, events.map((e) => e.event.messageId), 60_000);
    expect(dlq).toEqual([]);
    expect(await resolver.stalls.readinessCheck()).toBe('ok');
  });

  it('a fault gone by the time of the proof costs nothing: the event gets one more attempt after its proof, and is stored', async () => {
    broken = false;
    const org = await h.org();
    // The bug fails the batch and the event's attempt alone, then is gone: the probe passes.
    failingLookUps = 2;
    const event = h.envelope(org, { type: 'page', anonymousId: 'gone-bug', timestamp: minutesAgo(1) });
    await h.produce([event]);
    await h.waitForStored(org, [event.event.messageId]);
    expect(failingLookUps).toBe(0);
    expect(dlq.filter((m) => (m.value as unknown as RawEventEnvelope).orgId === org)).toEqual([]);
  });

  it('a lone poison event is dead-lettered at once: a minimal event of its organisation passes, so the event is to blame', async () => {
    broken = false;
    const org = await h.org();
    // Valid for the schema, but no PostgreSQL timestamp: it can never be stored.
    const poison = h.envelope(org, { type: 'page', anonymousId: 'lone', timestamp: '0000-01-01T00:00:00Z' });
    await h.produce([poison]);
    await h.waitFor('the dead-lettered event', async () => (await h.findEvent(dlq, poison.event.messageId)) !== undefined);
    expect(resolver.stalls.stalled).toBe(0);
    // The probe left nothing behind.
    expect(await h.count('select count(*) as n from identity.events where org_id = ?', [org])).toBe(0);
    expect(await h.count('select count(*) as n from identity.profiles where org_id = ?', [org])).toBe(0);
  });
});
