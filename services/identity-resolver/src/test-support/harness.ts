import { randomBytes } from 'node:crypto';
import { busMigrations, createPostgresLogBus, prefixedTopics, type IncomingMessage, type OutgoingMessage, type PostgresLogBus } from '@svc/bus';
import type { InboundEvent, RawEventEnvelope, RawLogMessage, TopicSpec } from '@svc/contracts';
import { createDb, createMetrics, type Db, type Logger } from '@svc/runtime';
import { AccountsStore, accountsMigrations } from '@svc/accounts';
import { createTestDatabase, rawEnvelope, testLogger, type TestDatabase } from '@svc/testkit';
import { resolverMetrics, type ResolverMetrics } from '../metrics';
import { DataKeyReader, IdentifierHashes, MasterKeyRing, SubjectKeys, identityMigrations, openRawLog, privacyMigrations, sealRawEvent, type EventRow as PlannedEventRow } from '@svc/identity';
import { startResolver, type RunningResolver, type StartResolverOptions } from '../start';

/**
 * Integration-test scaffolding: a database of its own with the accounts, bus
 * and identity schemas, the real Postgres-backed log under a unique topic
 * prefix, real resolvers, and bounded waits on conditions.
 */
export class Harness {
  readonly topics = prefixedTopics(`ir${randomBytes(3).toString('hex')}.`);
  readonly logger: Logger = testLogger('identity-resolver-test');
  /** The raw log's master key of this suite's "deployment". */
  readonly masterKeys = new MasterKeyRing(randomBytes(32));
  readonly hashes = new IdentifierHashes([randomBytes(32)]);
  t!: TestDatabase;
  /** The bus tests produce with and listen on. */
  bus!: PostgresLogBus;
  accounts!: AccountsStore;
  private readonly buses: PostgresLogBus[] = [];
  private readonly resolvers: RunningResolver[] = [];
  private readonly collected = new Map<string, Array<IncomingMessage<Record<string, unknown>>>>();
  private readonly extraDbs: Db[] = [];

  get db(): Db {
    return this.t.db;
  }

  async setUp(): Promise<void> {
    this.t = await createTestDatabase([accountsMigrations, busMigrations, identityMigrations, privacyMigrations]);
    this.accounts = new AccountsStore(this.t.db);
    this.bus = this.newBus();
    await this.bus.ensureTopics(Object.values(this.topics));
  }

  /** Stops everything, and fails the suite if any row names a profile that does not exist (those tables have no foreign key). */
  async tearDown(): Promise<void> {
    for (const r of this.resolvers.splice(0)) await r.stop().catch(() => undefined);
    for (const b of this.buses.splice(0)) await b.close().catch(() => undefined);
    for (const d of this.extraDbs.splice(0)) await d.destroy().catch(() => undefined);
    const orphans = this.t ? await this.orphans() : {};
    await this.t?.drop();
    if (Object.keys(orphans).length > 0) throw new Error(`rows naming no profile: ${JSON.stringify(orphans)}`);
  }

  /** Per table, the rows whose profile_id names no profile. */
  async orphans(): Promise<Record<string, number>> {
    const found: Record<string, number> = {};
    for (const table of ['events', 'identity_signals', 'profile_sessions', 'click_ids', 'fingerprints']) {
      const n = await this.count(`select count(*) as n from identity.${table} r where not exists (select 1 from identity.profiles p where p.id = r.profile_id)`, []);
      if (n > 0) found[table] = n;
    }
    return found;
  }

  newBus(db: Db = this.t.db): PostgresLogBus {
    const bus = createPostgresLogBus({ db, url: this.t.url, pollFallbackMs: 200, heartbeatMs: 200, sessionTimeoutMs: 2_000 });
    this.buses.push(bus);
    return bus;
  }

  /** A knex pool of its own (so a test can kill one resolver's connections). */
  newDb(applicationName: string): Db {
    const db = createDb({ url: this.t.url, poolMax: 6, applicationName });
    this.extraDbs.push(db);
    return db;
  }

  async startResolver(options: Partial<StartResolverOptions> & { bus?: PostgresLogBus } = {}): Promise<RunningResolver & { metrics: ResolverMetrics }> {
    const metrics = resolverMetrics(createMetrics({ collectDefaultMetrics: false }));
    const running = await startResolver({
      db: this.t.db,
      bus: this.bus,
      topics: this.topics,
      logger: this.logger,
      metrics,
      relay: { intervalMs: 100 },
      ...options,
      masterKeys: options.masterKeys ?? this.masterKeys,
      hashes: options.hashes ?? this.hashes,
    });
    this.resolvers.push(running);
    return { ...running, metrics };
  }

  async org(name = 'Test org'): Promise<string> {
    return (await this.accounts.createOrganization({ name })).id;
  }

  envelope(orgId: string, event: Partial<InboundEvent> & Pick<InboundEvent, 'type'>, receivedAt = new Date()): RawEventEnvelope {
    return rawEnvelope(orgId, event, receivedAt);
  }

  /** A key reader over this suite's keys, as the resolver has (for handlers a test builds itself). */
  keyReader(): DataKeyReader {
    return new DataKeyReader(this.db, this.masterKeys);
  }

  /**
   * Produces to the raw topic as the gateway does: each event sealed under
   * its anonymous id's data key, keyed org:keyId (`sealed: false`: in clear,
   * as the log held events before they were sealed); returns the message ids.
   */
  async produce(envelopes: readonly RawEventEnvelope[], { sealed = true }: { sealed?: boolean } = {}): Promise<string[]> {
    const keys = new SubjectKeys(this.db, this.masterKeys, this.hashes);
    const messages: Array<OutgoingMessage<RawLogMessage>> = [];
    for (const e of envelopes) {
      if (!sealed) {
        messages.push({ key: `${e.orgId}:${e.event.anonymousId}`, value: e });
        continue;
      }
      const key = (await keys.forSubjects(e.orgId, [e.event.anonymousId])).get(e.event.anonymousId)!;
      messages.push({ key: `${e.orgId}:${key.id}`, value: sealRawEvent(e, key) });
    }
    const results = await this.bus.produce(this.topics.eventsRaw, messages);
    if (!results.every((r) => r.ok)) throw new Error('produce failed');
    return envelopes.map((e) => e.event.messageId);
  }

  /** The message of `messages` (a dead-letter topic's, say) that holds the event `messageId`, opened with this suite's keys. */
  async findEvent<M extends { value: unknown }>(messages: readonly M[], messageId: string): Promise<M | undefined> {
    for (const m of messages) {
      const [opened] = (await openRawLog(this.keyReader(), [m.value as RawLogMessage])).events;
      if (opened?.event.messageId === messageId) return m;
    }
    return undefined;
  }

  /** Produces and waits until every event is stored. */
  async ingest(envelopes: readonly RawEventEnvelope[], ms?: number): Promise<string[]> {
    const ids = await this.produce(envelopes);
    const orgId = envelopes[0]?.orgId;
    if (orgId) await this.waitForStored(orgId, ids, ms);
    return ids;
  }

  async waitForStored(orgId: string, messageIds: readonly string[], ms = 20_000): Promise<void> {
    await this.waitFor(`${messageIds.length} events stored`, async () => {
      const { rows } = (await this.db.raw(
        'select count(*) as n from identity.events where org_id = ? and message_id = any(?::text[])',
        [orgId, [...messageIds]],
      )) as { rows: Array<{ n: number }> };
      return rows[0]?.n === new Set(messageIds).size;
    }, ms);
  }

  async waitFor(what: string, cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
    const until = Date.now() + ms;
    for (;;) {
      if (await cond()) return;
      if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Starts collecting a topic (its own consumer group) from the beginning. */
  async collect(topic: TopicSpec): Promise<Array<IncomingMessage<Record<string, unknown>>>> {
    const existing = this.collected.get(topic.name);
    if (existing) return existing;
    const out: Array<IncomingMessage<Record<string, unknown>>> = [];
    this.collected.set(topic.name, out);
    await this.bus.subscribe<Record<string, unknown>>({
      groupId: `collector-${randomBytes(3).toString('hex')}`,
      topics: [topic],
      handler: async (batch) => void out.push(...batch.messages),
    });
    return out;
  }

  // ---- reading the projections ----

  async profileBySignal(orgId: string, type: string, value: string): Promise<ProfileRow | undefined> {
    const { rows } = (await this.db.raw(
      `select p.* from identity.identity_signals s join identity.profiles p on p.id = s.profile_id
       where s.org_id = ? and s.signal_type = ? and s.signal_value = ?`,
      [orgId, type, value],
    )) as { rows: ProfileRow[] };
    return rows[0];
  }

  async liveProfiles(orgId: string): Promise<ProfileRow[]> {
    const { rows } = (await this.db.raw('select * from identity.profiles where org_id = ? and merged_into is null order by created_at', [orgId])) as { rows: ProfileRow[] };
    return rows;
  }

  async events(orgId: string): Promise<EventRow[]> {
    const { rows } = (await this.db.raw('select * from identity.events where org_id = ? order by event_timestamp, message_id', [orgId])) as { rows: EventRow[] };
    return rows;
  }

  async event(orgId: string, messageId: string): Promise<EventRow> {
    const row = (await this.db('identity.events').where({ org_id: orgId, message_id: messageId }).first()) as EventRow | undefined;
    if (!row) throw new Error(`event ${messageId} not stored`);
    return row;
  }

  async count(sql: string, bindings: unknown[]): Promise<number> {
    const { rows } = (await this.db.raw(sql, bindings as never)) as { rows: Array<{ n: number }> };
    return Number(rows[0]?.n ?? 0);
  }

  async outboxSequence(): Promise<number> {
    const { rows } = (await this.db.raw(
      "select coalesce(last_value, 0) as n, is_called from identity.outbox_id_seq",
    )) as { rows: Array<{ n: number; is_called: boolean }> };
    return rows[0]?.is_called ? rows[0].n : 0;
  }
}

export interface ProfileRow {
  id: string;
  org_id: string;
  canonical_id: string;
  merged_into: string | null;
  user_id: string | null;
  identified: boolean;
  traits: Record<string, unknown>;
  first_seen_at: Date;
  last_seen_at: Date;
  event_count: number;
  session_count: number;
  engagement_score: number;
  /** The instant engagement_score is as of (null until an event scores). */
  engagement_updated_at: Date | null;
  first_touch: Record<string, unknown> | null;
  last_touch: Record<string, unknown> | null;
  created_at: Date;
}

/** A stored event as read back (pg parses its timestamp). */
export type EventRow = Pick<PlannedEventRow, 'id' | 'org_id' | 'message_id' | 'profile_id' | 'event_name' | 'properties' | 'context' | 'resolution_method'> & { event_timestamp: Date };

export const minutesAgo = (n: number, from = Date.now()): string => new Date(from - n * 60_000).toISOString();
