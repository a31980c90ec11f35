/**
 * What became of a load run's events: waits (bounded) until every event a
 * 200 acknowledged is stored in identity.events, then counts what is
 * missing, what is stored twice, and whether the organisations' monthly
 * usage equals the rows stored (usage above the rows means an event was
 * counted twice, which the (org_id, message_id) constraint cannot show).
 */
import type { RawEventEnvelope, TopicSpec } from '@svc/contracts';
import { deadLetterTopicFor, readToEnd, type Bus } from '@svc/bus';
import type { Db } from '@svc/runtime';
import type { LoadResult } from '@svc/testkit';

export interface Verification {
  acknowledged: number;
  /** Rows in identity.events for the run's organisations. */
  stored: number;
  /** Acknowledged but not stored (a sample of at most 10, and the count). */
  missing: number;
  missingSample: string[];
  /** (org_id, message_id) pairs stored more than once. */
  duplicated: number;
  /** Sum of accounts.monthly_usage.unique_events for the run's organisations. */
  usage: number;
  /** Stored but never sent by this run. */
  phantom: number;
  /** Stored though no 200 acknowledged them (from 503s or hangs whose produce went through after all): allowed. */
  storedUnacknowledged: number;
  /** 200s whose failures were not all named, with fewer of their events stored than they reported processed. */
  ambiguousShort: number;
  /** Events those 200s reported processed beyond what is stored: lost, though which ones the answer did not say. */
  ambiguousLost: number;
  /** Epoch ms when every acknowledged event was found stored; null if not within the bound. */
  caughtUpAt: number | null;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function usageOf(db: Db, orgIds: readonly string[]): Promise<number> {
  const { rows } = await db.raw<{ rows: Array<{ n: string }> }>(
    'select coalesce(sum(unique_events), 0)::bigint as n from accounts.monthly_usage where org_id = any(?::uuid[])',
    [[...orgIds]],
  );
  return Number(rows[0]?.n ?? 0);
}

export async function storedIds(db: Db, orgIds: readonly string[]): Promise<string[]> {
  const { rows } = await db.raw<{ rows: Array<{ message_id: string }> }>('select message_id from identity.events where org_id = any(?::uuid[])', [[...orgIds]]);
  return rows.map((r) => r.message_id);
}

/** 200s that did not name all their failures, with fewer of their events stored than they said processed. */
function ambiguousShortOf(load: LoadResult, stored: ReadonlySet<string>): number {
  return ambiguousShortfall(load, stored).requests;
}

function ambiguousShortfall(load: LoadResult, stored: ReadonlySet<string>): { requests: number; events: number } {
  let requests = 0;
  let events = 0;
  for (const r of load.records) {
    if (!r.ambiguous) continue;
    const have = r.messageIds.filter((id) => stored.has(id)).length;
    if (have < r.processed) {
      requests++;
      events += r.processed - have;
    }
  }
  return { requests, events };
}

/**
 * For a failure's diagnosis: which of `ids` are in the raw topic, and how
 * many messages its dead-letter topic holds. Reads the whole topic (a
 * throwaway consumer group), so only when something is missing.
 */
export async function lookInLog(bus: Bus, rawTopic: TopicSpec, ids: ReadonlySet<string>): Promise<{ found: Set<string>; deadLettered: number }> {
  const found = new Set<string>();
  await readToEnd<RawEventEnvelope>(bus, rawTopic, async (messages) => {
    for (const m of messages) if (ids.has(m.value.event.messageId)) found.add(m.value.event.messageId);
  });
  const deadLettered = await bus
    .endOffsets(deadLetterTopicFor(rawTopic))
    .then((ends) => ends.reduce((sum, o) => sum + Number(o), 0))
    .catch(() => 0);
  return { found, deadLettered };
}

export async function verifyStored(db: Db, orgIds: readonly string[], load: LoadResult, withinMs: number): Promise<Verification> {
  const deadline = Date.now() + withinMs;
  let caughtUpAt: number | null = null;
  let ids: string[] = [];
  for (;;) {
    // The cheap look first: usage is written in the transaction that stores the events.
    const enough = (await usageOf(db, orgIds)) >= load.acknowledged.size;
    if (enough || Date.now() >= deadline) {
      ids = await storedIds(db, orgIds);
      const stored = new Set(ids);
      let missing = 0;
      for (const id of load.acknowledged) if (!stored.has(id)) missing++;
      if (missing === 0 && ambiguousShortOf(load, stored) === 0) {
        caughtUpAt = Date.now();
        break;
      }
    }
    if (Date.now() >= deadline) break;
    await sleep(enough ? 1_000 : 250);
  }
  const stored = new Set(ids);
  const missingIds = [...load.acknowledged].filter((id) => !stored.has(id));
  const { rows: dup } = await db.raw<{ rows: Array<{ n: string }> }>(
    `select count(*)::bigint as n from (
       select org_id, message_id from identity.events where org_id = any(?::uuid[]) group by org_id, message_id having count(*) > 1
     ) d`,
    [[...orgIds]],
  );
  const shortfall = ambiguousShortfall(load, stored);
  return {
    acknowledged: load.acknowledged.size,
    stored: ids.length,
    missing: missingIds.length,
    missingSample: missingIds.slice(0, 10),
    duplicated: Number(dup[0]?.n ?? 0),
    usage: await usageOf(db, orgIds),
    phantom: ids.filter((id) => !load.sent.has(id)).length,
    storedUnacknowledged: [...stored].filter((id) => !load.acknowledged.has(id)).length,
    ambiguousShort: shortfall.requests,
    ambiguousLost: shortfall.events,
    caughtUpAt,
  };
}

/** Samples the organisations' usage (stored events) every `intervalMs` until stopped: [epoch ms, stored]. */
export function startStoredSampler(db: Db, orgIds: readonly string[], intervalMs = 500): { stop(): Promise<Array<[number, number]>> } {
  const samples: Array<[number, number]> = [];
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const t = Date.now();
      const n = await usageOf(db, orgIds).catch(() => undefined);
      if (n !== undefined) samples.push([t, n]);
      await sleep(Math.max(0, intervalMs - (Date.now() - t)));
    }
  })();
  return {
    async stop() {
      stopping = true;
      await loop;
      return samples;
    },
  };
}

/**
 * The storage lag at each sample, in seconds: how long ago the oldest
 * acknowledged event not yet stored was acknowledged. With S events stored
 * at time t, that is t minus the moment the acknowledged total first
 * exceeded S (0 when S covers every event acknowledged by t). Events are
 * taken to be stored roughly in acknowledgement order, and events stored
 * without a 200 count as stored: an estimate, good to about a second.
 */
export function lagSeries(samples: ReadonlyArray<[number, number]>, ackTimeline: ReadonlyArray<[number, number]>): Array<[number, number]> {
  return samples.map(([t, stored]) => {
    const oldest = ackTimeline.find(([at, total]) => total > stored && at <= t);
    return [t, oldest ? (t - oldest[0]) / 1000 : 0];
  });
}

/**
 * Seconds from `faultEnd` until the lag fell under `threshold` for good
 * (every later sample under it); 0 if it was already under it. If the last
 * sample of the run was still over it, the moment everything acknowledged
 * was stored (`caughtUpAt`) ends the lag instead; null if that never came.
 */
export function recoverySeconds(lag: ReadonlyArray<[number, number]>, faultEnd: number, caughtUpAt: number | null, threshold = 2): number | null {
  let lastOver = -1;
  lag.forEach(([, l], i) => {
    if (l >= threshold) lastOver = i;
  });
  if (lastOver < 0 || lag[lastOver]![0] < faultEnd) return 0;
  const under = lag[lastOver + 1];
  const at = under ? under[0] : caughtUpAt;
  return at === null ? null : Math.max(0, (at - faultEnd) / 1000);
}

export function maxLag(lag: ReadonlyArray<[number, number]>): number {
  return lag.reduce((m, [, l]) => Math.max(m, l), 0);
}
