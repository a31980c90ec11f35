import { isoTimestampSql, preparedRaw, type Db } from '@svc/runtime';

/**
 * Restating stored phone signals: the phone numbers profiles hold, read
 * again from their stored events under the organisation's rules as they are
 * now. Queued by migration 0014 for every profile stored before phones were
 * read with libphonenumber (a hand-written reading had stored a British
 * `020 7946 0958` as `+12079460958`), by an organisation's identity rules
 * when they change its region, and by `svcctl phones restate`. The identity
 * resolver carries it out (its phone-restatement.ts), profile by profile in
 * two steps per organisation:
 *
 * 1. every profile's numbers its events no longer give are dropped, so that
 *    no stale number is mistaken for another person's right one;
 * 2. then, for every profile, each number its events give that it does not
 *    hold goes through the resolver's ordinary rules, as the event would
 *    today: attached, or the profiles sharing it merged (journaled, on
 *    profiles.changes) where the rules allow.
 *
 * A step-2 row of an organisation waits until none of its step-1 rows is
 * left, whichever resolver holds them.
 */

export type RestatementStep = 1 | 2;

/** One claimed piece of work: profiles of one organisation at one step, locked until the transaction ends. */
export interface RestatementChunk {
  orgId: string;
  step: RestatementStep;
  profileIds: string[];
}

/** The raw phone an event carried, as personTraits reads it (its traits over its context's); JSON null when absent. */
const RAW_PHONE = `coalesce(e.traits -> 'phone', e.context -> 'traits' -> 'phone', 'null'::jsonb)`;

/** Group events carry the group's traits, not the person's. */
const PERSON_EVENTS = `e.event_name <> '$group'`;

/**
 * The rows that queue an organisation's restatement (every organisation's:
 * `org` null): step 1 for each profile holding a phone, step 2 for each
 * profile with an event carrying one. A row queued already stays queued.
 */
export const QUEUE_PHONE_RESTATEMENT_SQL = (org: string) => `
  insert into identity.phone_restatements (org_id, profile_id, step)
  select org_id, profile_id, 1 from identity.identity_signals
  where signal_type = 'phone' and (${org} is null or org_id = ${org})
  union
  select e.org_id, e.profile_id, 2 from identity.events e
  where ${RAW_PHONE} <> 'null'::jsonb and ${PERSON_EVENTS} and (${org} is null or e.org_id = ${org})
  on conflict do nothing`;

/** Queues the organisation's phone signals (every organisation's: null) to be restated by the resolver; returns how many profiles' steps were queued. */
export async function queuePhoneRestatement(db: Db, orgId: string | null): Promise<number> {
  const result = (await db.raw(QUEUE_PHONE_RESTATEMENT_SQL(':org::uuid'), { org: orgId })) as { rowCount: number };
  return result.rowCount;
}

/**
 * Claims up to `size` profiles of one organisation at one step (`for update
 * skip locked`: another resolver takes other rows), step 1 first; an
 * organisation's step 2 only once no step-1 row of it is left. Undefined when
 * nothing is claimable.
 */
export async function claimRestatement(trx: Db, size: number): Promise<RestatementChunk | undefined> {
  const { rows } = (await preparedRaw(
    trx,
    `with next as (
       select r.org_id, r.step from identity.phone_restatements r
       where r.step = 1 or not exists (select 1 from identity.phone_restatements s where s.org_id = r.org_id and s.step = 1)
       order by r.step, r.org_id, r.profile_id limit 1 for update skip locked
     )
     select next.org_id, next.step, array(
       select r.profile_id from identity.phone_restatements r
       where r.org_id = next.org_id and r.step = next.step
       order by r.profile_id limit :size for update skip locked
     ) as profile_ids
     from next`,
    { size },
  )) as { rows: Array<{ org_id: string; step: RestatementStep; profile_ids: string[] }> };
  const row = rows[0];
  return row && { orgId: row.org_id, step: row.step, profileIds: row.profile_ids };
}

/** The chunk's rows, done. */
export async function finishRestatement(trx: Db, chunk: RestatementChunk): Promise<void> {
  await preparedRaw(trx, 'delete from identity.phone_restatements where org_id = ? and step = ? and profile_id = any(?::uuid[])', [chunk.orgId, chunk.step, chunk.profileIds]);
}

/** How many profiles' steps are queued (every organisation's). */
export async function pendingRestatements(db: Db): Promise<number> {
  const { rows } = (await db.raw('select count(*)::int as n from identity.phone_restatements')) as { rows: Array<{ n: number }> };
  return rows[0]!.n;
}

/** A profile's stored phone signal. */
export interface HeldPhone {
  profile_id: string;
  value: string;
}

/** A raw phone (as sent: a string, a number, anything) one of a profile's events carried. */
export interface WrittenPhone {
  profile_id: string;
  raw: unknown;
}

/** Step 1's reading: the profiles' phone signals, and the distinct raw phones of their events. */
export async function readHeldAndWrittenPhones(trx: Db, orgId: string, profileIds: readonly string[]): Promise<{ held: HeldPhone[]; written: WrittenPhone[] }> {
  const { rows } = (await preparedRaw(
    trx,
    `select
       (select coalesce(json_agg(json_build_object('profile_id', s.profile_id, 'value', s.signal_value)), '[]')
        from identity.identity_signals s
        where s.org_id = :org and s.signal_type = 'phone' and s.profile_id = any(:profiles::uuid[])) as held,
       (select coalesce(json_agg(json_build_object('profile_id', w.profile_id, 'raw', w.raw)), '[]') from (
          select distinct e.profile_id, ${RAW_PHONE} as raw from identity.events e
          where e.org_id = :org and e.profile_id = any(:profiles::uuid[]) and ${PERSON_EVENTS}
        ) w where w.raw <> 'null'::jsonb) as written`,
    { org: orgId, profiles: [...profileIds] },
  )) as { rows: Array<{ held: HeldPhone[]; written: WrittenPhone[] }> };
  return rows[0]!;
}

/** Deletes the organisation's phone signals of these values (each still held by the profile named). */
export async function dropPhones(trx: Db, orgId: string, phones: readonly HeldPhone[]): Promise<void> {
  if (phones.length === 0) return;
  await preparedRaw(
    trx,
    `delete from identity.identity_signals s using unnest(:values::text[], :profiles::uuid[]) as d (value, profile_id)
     where s.org_id = :org and s.signal_type = 'phone' and s.signal_value = d.value and s.profile_id = d.profile_id`,
    { org: orgId, values: phones.map((p) => p.value), profiles: phones.map((p) => p.profile_id) },
  );
}

/**
 * Who wrote a raw phone on a profile, and how often: one row per distinct
 * (userId, anonymousId, raw phone) of the profiles' events, with the first
 * such event (in arrival order, which the rows come in), the count and the
 * event times.
 */
export interface PhoneSighting {
  profile_id: string;
  user_id: string | null;
  anonymous_id: string;
  raw: unknown;
  message_id: string;
  events: number;
  first_seen_at: string;
  last_seen_at: string;
}

/** Step 2's reading: the profiles' phone sightings, in the order their first events arrived. */
export async function readPhoneSightings(trx: Db, orgId: string, profileIds: readonly string[]): Promise<PhoneSighting[]> {
  const { rows } = (await preparedRaw(
    trx,
    `select profile_id, user_id, anonymous_id, raw, count(*)::int as events,
       (array_agg(message_id order by received_at, event_timestamp, id))[1] as message_id,
       min(received_at) as first_received,
       ${isoTimestampSql('min(event_timestamp)')} as first_seen_at,
       ${isoTimestampSql('max(event_timestamp)')} as last_seen_at
     from (
       select e.profile_id, e.user_id, e.anonymous_id, ${RAW_PHONE} as raw, e.message_id, e.received_at, e.event_timestamp, e.id
       from identity.events e
       where e.org_id = :org and e.profile_id = any(:profiles::uuid[]) and ${PERSON_EVENTS}
     ) e
     where raw <> 'null'::jsonb
     group by profile_id, user_id, anonymous_id, raw
     order by first_received, message_id`,
    { org: orgId, profiles: [...profileIds] },
  )) as { rows: Array<PhoneSighting & { first_received: Date }> };
  return rows.map(({ first_received: _, ...s }) => s);
}
