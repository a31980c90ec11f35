import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Bus, OutgoingMessage, ProduceResult } from '@svc/bus';
import type { ResolvedEvent, TopicSpec } from '@svc/contracts';
import { eraseProfile, requestErasure } from '@svc/identity';
import { describeWithPostgres } from '@svc/testkit';
import { OutboxRelay } from './outbox';
import { processBatch } from './process-batch';
import { Harness } from './test-support/harness';

/**
 * The outbox's events.resolved rows on the Postgres-backed log, with no
 * resolver running (so no other relay): one row per transaction naming its
 * events in order; a cycle the log refuses in part keeps exactly the events
 * not sent (a key's order held), so each is sent once; an erasure takes its
 * events out of a row that also names someone else's.
 */
describeWithPostgres('outbox: events.resolved rows', () => {
  const h = new Harness();
  let resolved: Awaited<ReturnType<Harness['collect']>>;
  beforeAll(async () => {
    await h.setUp();
    resolved = await h.collect(h.topics.eventsResolved);
  });
  afterAll(() => h.tearDown());

  /** Two visitors' events, a1 b1 a2 b2 a3, stored in one transaction. */
  async function storeTwoVisitors(org: string): Promise<{ ids: string[]; messageIds: string[] }> {
    const envelopes = ['a', 'b', 'a', 'b', 'a'].map((v, i) => h.envelope(org, { type: 'track', event: `step ${i}`, anonymousId: `visitor-${v}` }));
    const outcome = await h.db.transaction((trx) => processBatch(trx, envelopes, { hashes: h.hashes }));
    expect(outcome.stored).toBe(5);
    return { ids: outcome.resolved.map((e) => e.eventId), messageIds: envelopes.map((e) => e.event.messageId) };
  }

  const rowsNaming = async (ids: string[]) =>
    (await h.db.raw(`select id, event_ids from identity.outbox where topic = 'eventsResolved' and event_ids && ?::uuid[] order by id`, [ids])).rows as Array<{
      id: number;
      event_ids: string[];
    }>;

  /** The bus, refusing every message whose key `refuse` names (as a broker refusing one partition would). */
  function refusing(refuse: (key: string) => boolean): Pick<Bus, 'produce'> {
    return {
      produce: async <T>(topic: TopicSpec, messages: ReadonlyArray<OutgoingMessage<T>>): Promise<ProduceResult[]> => {
        const passing = messages.filter((m) => !refuse(m.key));
        const results = await h.bus.produce(topic, passing);
        let next = 0;
        return messages.map((m) => (refuse(m.key) ? { ok: false, error: new Error('refused for the test') } : results[next++]!));
      },
    };
  }

  it('one row names a transaction’s events; a cycle refused in part keeps exactly what was not sent, and each event is sent once, a key’s in order', async () => {
    const org = await h.org();
    const { ids, messageIds } = await storeTwoVisitors(org);
    const [row] = await rowsNaming(ids);
    expect(row!.event_ids).toEqual(ids);
    expect(await h.count(`select count(*) as n from identity.outbox where topic = 'eventsResolved' and event_ids && ?::uuid[]`, [ids])).toBe(1);

    const first = ids[0]!;
    const profileA = (await h.event(org, messageIds[0]!)).profile_id;
    const relay = (bus: Pick<Bus, 'produce'>) => new OutboxRelay({ db: h.db, bus, topics: h.topics, logger: h.logger });
    await expect(relay(refusing((key) => key === profileA)).relayOnce()).resolves.toEqual({ moreWaiting: false });
    // a1 failed, so a2 and a3 were held back; b1 and b2 went.
    expect((await rowsNaming(ids)).map((r) => r.event_ids)).toEqual([[ids[0], ids[2], ids[4]]]);

    await relay(h.bus).relayOnce();
    expect(await rowsNaming(ids)).toEqual([]);
    const mine = () => resolved.filter((m) => (m.value as unknown as ResolvedEvent).orgId === org);
    await h.waitFor('five messages', () => mine().length === 5);
    const sent = mine().map((m) => (m.value as unknown as ResolvedEvent).eventId);
    expect([...sent].sort()).toEqual([...ids].sort());
    expect(sent.filter((id) => [ids[0], ids[2], ids[4]].includes(id))).toEqual([first, ids[2], ids[4]]);
    expect(sent.filter((id) => [ids[1], ids[3]].includes(id))).toEqual([ids[1], ids[3]]);
  });

  it('an erasure takes its events out of a row that names someone else’s too', async () => {
    const org = await h.org();
    const { ids, messageIds } = await storeTwoVisitors(org);
    const profileA = (await h.event(org, messageIds[0]!)).profile_id;
    const recorded = await requestErasure(h.db, { orgId: org, target: { kind: 'profile', id: profileA }, actor: 'test', hashes: h.hashes });
    if (recorded.outcome !== 'recorded') throw new Error(`not recorded: ${recorded.outcome}`);
    await h.db.transaction((trx) => eraseProfile(trx, { orgId: org, erasureId: recorded.erasure.id, profileId: profileA, hashes: h.hashes }));
    expect((await rowsNaming(ids)).map((r) => r.event_ids)).toEqual([[ids[1], ids[3]]]);
  });
});
