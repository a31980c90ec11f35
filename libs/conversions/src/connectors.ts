import { NotFoundError, ValidationError, type Db } from '@svc/runtime';
import { CONNECTOR_FIELDS, parseEventNames, platformConfig, splitConnectorConfig } from './connector-config';
import { PLATFORMS, type GoogleAdsConfig, type MetaConfig, type Platform } from './platforms';
import { open, seal } from './secrets';

export type ConnectorState = 'active' | 'disabled';

/** A connector as the CLI shows it: settings, and only the names of the secrets that are set. */
export interface ConnectorView {
  id: string;
  orgId: string;
  platform: Platform;
  state: ConnectorState;
  settings: Record<string, string>;
  secretsSet: string[];
  /** null: the spec's default names. */
  eventNames: string[] | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What decides which connectors a candidate goes to: an active connector and its qualifying names (no secrets). */
export interface ConnectorRule {
  id: string;
  orgId: string;
  platform: Platform;
  /** null: the spec's defaults. */
  eventNames: ReadonlySet<string> | null;
}

/** An active connector ready to send: its platform client's config, secrets opened. */
export interface Connector {
  id: string;
  orgId: string;
  platform: Platform;
  /** The names that qualify for this connector; null = the defaults. */
  eventNames: ReadonlySet<string> | null;
  config: GoogleAdsConfig | MetaConfig;
  /** Changes whenever the connector does, so cached platform clients are rebuilt. */
  version: string;
}

interface Row {
  id: string;
  org_id: string;
  platform: Platform;
  state: ConnectorState;
  settings: Record<string, string>;
  sealed_secrets: Buffer;
  event_names: string[] | null;
  created_at: Date;
  updated_at: Date;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

/** conversions.connectors: written by svcctl, read by the forwarder and (for qualifying names) the resolver. */
export class ConnectorStore {
  constructor(
    private readonly db: Db,
    /** CONNECTOR_SECRET_KEY; needed to add a connector or to send, not to list one. */
    private readonly secretKey?: Buffer,
  ) {}

  async add(input: { orgId: string; platform: string; config: unknown; events?: string }): Promise<ConnectorView> {
    if (!(PLATFORMS as readonly string[]).includes(input.platform)) {
      throw new ValidationError(`--platform must be one of ${PLATFORMS.join(', ')} (got ${JSON.stringify(input.platform)})`);
    }
    const platform = input.platform as Platform;
    const { settings, secrets } = splitConnectorConfig(platform, input.config);
    const eventNames = parseEventNames(input.events);
    if (!UUID.test(input.orgId)) throw new NotFoundError(`organization ${input.orgId} not found`);
    const id = (await this.db.raw<{ rows: Array<{ id: string }> }>('select gen_random_uuid() as id')).rows[0]!.id;
    try {
      const [row] = (await this.db('conversions.connectors')
        .insert({
          id,
          org_id: input.orgId,
          platform,
          settings,
          sealed_secrets: seal(this.key(), id, secrets),
          event_names: eventNames,
        })
        .returning('*')) as Row[];
      return view(row!);
    } catch (err) {
      throw this.friendly(err, input.orgId, platform);
    }
  }

  async list(orgId: string): Promise<ConnectorView[]> {
    if (!UUID.test(orgId)) return [];
    const rows = (await this.db('conversions.connectors').where({ org_id: orgId }).orderBy('created_at')) as Row[];
    return rows.map(view);
  }

  async setState(id: string, state: ConnectorState): Promise<ConnectorView> {
    if (!UUID.test(id)) throw new NotFoundError(`connector ${id} not found`);
    try {
      const [row] = (await this.db('conversions.connectors')
        .where({ id })
        .update({ state, updated_at: this.db.fn.now() })
        .returning('*')) as Row[];
      if (!row) throw new NotFoundError(`connector ${id} not found`);
      return view(row);
    } catch (err) {
      if (err instanceof NotFoundError) throw err;
      const existing = (await this.db('conversions.connectors').where({ id }).first()) as Row | undefined;
      throw this.friendly(err, existing?.org_id ?? '', existing?.platform ?? 'google_ads');
    }
  }

  /** The organisations' active connectors and their qualifying names (no secrets opened). */
  async activeRules(orgIds: readonly string[]): Promise<ConnectorRule[]> {
    if (orgIds.length === 0) return [];
    const rows = (await this.db('conversions.connectors')
      .whereIn('org_id', orgIds)
      .andWhere({ state: 'active' })
      .select('id', 'org_id', 'platform', 'event_names')) as Array<Pick<Row, 'id' | 'org_id' | 'platform' | 'event_names'>>;
    return rows.map((r) => ({ id: r.id, orgId: r.org_id, platform: r.platform, eventNames: r.event_names ? new Set(r.event_names) : null }));
  }

  /** Active connectors by id (a disabled one is absent: its queue waits until it is enabled again). */
  async activeById(ids: readonly string[]): Promise<Connector[]> {
    if (ids.length === 0) return [];
    const rows = (await this.db('conversions.connectors').whereIn('id', ids).andWhere({ state: 'active' })) as Row[];
    return rows.map((row) => this.connector(row));
  }

  private connector(row: Row): Connector {
    return {
      id: row.id,
      orgId: row.org_id,
      platform: row.platform,
      eventNames: row.event_names ? new Set(row.event_names) : null,
      config: platformConfig({ settings: row.settings, secrets: open(this.key(), row.id, row.sealed_secrets) }),
      version: `${row.id}@${row.updated_at.toISOString()}`,
    };
  }

  private key(): Buffer {
    if (!this.secretKey) throw new ValidationError('CONNECTOR_SECRET_KEY is not set: it is needed to store or use connector secrets');
    return this.secretKey;
  }

  private friendly(err: unknown, orgId: string, platform: Platform): unknown {
    const code = (err as { code?: string }).code;
    if (code === FOREIGN_KEY_VIOLATION) return new NotFoundError(`organization ${orgId} not found`);
    if (code === UNIQUE_VIOLATION) {
      return new ValidationError(`organization ${orgId} already has an active ${platform} connector; disable it first`);
    }
    return err;
  }
}

function view(row: Row): ConnectorView {
  return {
    id: row.id,
    orgId: row.org_id,
    platform: row.platform,
    state: row.state,
    settings: row.settings,
    // The names are derived from the platform's field list, not from the sealed blob, so listing needs no key.
    secretsSet: secretNames(row.platform),
    eventNames: row.event_names,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const secretNames = (platform: Platform) =>
  Object.entries(CONNECTOR_FIELDS[platform])
    .filter(([, f]) => f.secret)
    .map(([k]) => k);
