import { randomBytes } from 'node:crypto';
import type { InboundEvent, RawEventEnvelope } from '@svc/contracts';
import { conversionsMigrations } from '@svc/conversions';
import { IdentifierHashes, identityMigrations, privacyMigrations, inTransactionWithRetry } from '@svc/identity';
import { processBatch } from '@svc/identity-resolver';
import {
  createMetrics,
  serveHttp,
  type Db,
  type RunningHttpServer,
} from '@svc/runtime';
import { AccountsStore, FailedAuthThrottle, accountsMigrations, rateLimitMigrations } from '@svc/accounts';
import { createTestDatabase, rawEnvelope, testLogger, type TestDatabase } from '@svc/testkit';
import { mountProfileApi } from '../routes-setup';
import { documentedFetch } from '@svc/openapi';

export const TEST_CURSOR_SECRET = 'test-cursor-secret-of-at-least-32-characters';

export interface OrgKeys {
  orgId: string;
  read: string;
  write: string;
  admin: string;
}

export interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/**
 * Integration scaffolding: a database of its own with the accounts,
 * ratelimit, identity and profile_api schemas; the real Profiles API wiring
 * on 127.0.0.1:0; profiles built by the resolver's own batch routine
 * (processBatch, in a retried transaction, as its consumer runs it) from raw
 * envelopes shaped as the gateway produces them.
 *
 * The server trusts 127.0.0.1 as a proxy, and every request carries a fresh
 * X-Forwarded-For address unless the test names one: the functional suites
 * never share a rate-limit bucket, the rate-limit suites pick theirs.
 */
export class ProfileApiHarness {
  /** @param phoneCountryCode PHONE_DEFAULT_COUNTRY_CODE of this deployment: the resolver's and the Profiles API's. */
  constructor(private readonly phoneCountryCode?: string) {}

  readonly hashes = new IdentifierHashes([randomBytes(32)]);

  t!: TestDatabase;
  server!: RunningHttpServer;
  accounts!: AccountsStore;
  base = '';
  private ipSeq = 0;
  private readonly ipPrefix = `10.${randomBytes(1)[0]}`;

  get db(): Db {
    return this.t.db;
  }

  async setUp(): Promise<void> {
    this.t = await createTestDatabase([accountsMigrations, rateLimitMigrations, conversionsMigrations, identityMigrations, privacyMigrations]);
    this.accounts = new AccountsStore(this.t.db);
    const logger = testLogger('profile-api-test');
    this.server = await serveHttp({
      config: { HOST: '127.0.0.1', PORT: 0, TRUSTED_PROXIES: ['127.0.0.1'], TLS_CERT_FILE: undefined, TLS_KEY_FILE: undefined, REQUIRE_HTTPS: false },
      logger,
      metrics: createMetrics({ collectDefaultMetrics: false }),
      readiness: async () => ({ checks: {} }),
      mount: (router) =>
        mountProfileApi(router, {
          db: this.t.db,
          logger,
          trustedProxies: ['127.0.0.1'],
          failedAuth: new FailedAuthThrottle(1_000_000),
          cursorSecret: TEST_CURSOR_SECRET,
          ...(this.phoneCountryCode ? { defaultPhoneCountryCode: this.phoneCountryCode } : {}),
        }),
    });
    this.base = `${this.server.url}/functions/v1/v1-profiles`;
  }

  async tearDown(): Promise<void> {
    await this.server?.close();
    await this.t?.drop();
  }

  /** A fresh organisation with one key of each type (optionally rate-capped). */
  async org(name = 'Org', ratePerMinuteCap: number | null = null): Promise<OrgKeys> {
    const org = await this.accounts.createOrganization({ name });
    const key = async (type: 'read' | 'write' | 'admin') => (await this.accounts.createApiKey({ orgId: org.id, type, ratePerMinuteCap })).key;
    return { orgId: org.id, read: await key('read'), write: await key('write'), admin: await key('admin') };
  }

  envelope(orgId: string, event: Partial<InboundEvent> & Pick<InboundEvent, 'type'>, receivedAt = new Date()): RawEventEnvelope {
    return rawEnvelope(orgId, event, receivedAt);
  }

  /** Runs the resolver's batch routine on the envelopes, in one retried transaction, as its consumer does. */
  async ingest(envelopes: readonly RawEventEnvelope[], db: Db = this.db): Promise<void> {
    await inTransactionWithRetry(db, (trx) => processBatch(trx, envelopes, { hashes: this.hashes, ...(this.phoneCountryCode ? { defaultPhoneCountryCode: this.phoneCountryCode } : {}) }));
  }

  /** The live profile that owns a signal. */
  async profileOf(orgId: string, type: string, value: string): Promise<{ id: string; canonical_id: string }> {
    const row = (await this.db('identity.identity_signals as s')
      .join('identity.profiles as p', 'p.id', 's.profile_id')
      .where({ 's.org_id': orgId, 's.signal_type': type, 's.signal_value': value })
      .first('p.id', 'p.canonical_id')) as { id: string; canonical_id: string } | undefined;
    if (!row) throw new Error(`no profile has ${type} ${value}`);
    return row;
  }

  nextIp(): string {
    this.ipSeq++;
    return `${this.ipPrefix}.${(this.ipSeq >> 8) & 255}.${this.ipSeq & 255}`;
  }

  async get(path: string, key: string | undefined, options: { ip?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
    return this.send('GET', path, key, undefined, options);
  }

  async post(path: string, key: string | undefined, body: unknown, options: { ip?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
    return this.send('POST', path, key, body, options);
  }

  async send(
    method: string,
    path: string,
    key: string | undefined,
    body?: unknown,
    options: { ip?: string; headers?: Record<string, string> } = {},
  ): Promise<Reply> {
    // Every answer a test gets must be the OpenAPI document's for its route and status.
    const res = await documentedFetch(`${this.base}${path}`, {
      method,
      headers: {
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        'x-forwarded-for': options.ip ?? this.nextIp(),
        ...options.headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  }
}

export const minutesAgo = (n: number, from = Date.now()): string => new Date(from - n * 60_000).toISOString();
