import type pg from 'pg';
import { closeQuietly } from './connection';
import { backoffMs, type BusLogger } from '../shared';
import { GROUPS_CHANNEL } from './group';
import { MESSAGES_CHANNEL } from './store';

export interface Wakeable {
  topics: readonly string[];
  groupId: string;
  /** New messages may be in one of `topics`. */
  onMessages(): void;
  /** The group's membership may have changed. */
  onGroupChange(): void;
}

/**
 * The bus's one LISTEN session: turns NOTIFYs from appends and membership
 * changes into wake-ups of the consumers concerned. If it drops, it
 * reconnects with back-off and then wakes everyone, since notifications sent
 * meanwhile are lost; consumers also poll slowly as a last resort.
 */
export class Listener {
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;
  private failures = 0;
  private closed = false;
  private readonly subscribers = new Set<Wakeable>();

  constructor(
    private readonly open: (onError: (err: Error) => void) => Promise<pg.Client>,
    private readonly logger: BusLogger,
  ) {}

  /** Registers a consumer; resolves once LISTEN is in place, so no later append goes unnoticed. */
  async add(w: Wakeable): Promise<void> {
    this.subscribers.add(w);
    await this.ensureConnected();
  }

  remove(w: Wakeable): void {
    this.subscribers.delete(w);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    await closeQuietly(client);
  }

  private ensureConnected(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async connect(): Promise<void> {
    // The error callback exists before the client does; it only matters once we have one.
    const opened: { client?: pg.Client } = {};
    const client = await this.open((err) => opened.client && this.lost(opened.client, err));
    opened.client = client;
    client.on('end', () => this.lost(client, new Error('LISTEN session ended')));
    client.on('notification', (n) => this.dispatch(n.channel, n.payload));
    try {
      await client.query(`listen ${MESSAGES_CHANNEL}; listen ${GROUPS_CHANNEL}`);
    } catch (err) {
      await closeQuietly(client);
      throw err;
    }
    if (this.closed) {
      await closeQuietly(client);
      return;
    }
    this.client = client;
    this.failures = 0;
    // Anything sent while we were not listening is lost: have everyone look.
    for (const w of this.subscribers) {
      w.onMessages();
      w.onGroupChange();
    }
  }

  private lost(client: pg.Client, err: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    void closeQuietly(client);
    if (this.closed) return;
    this.logger.warn({ err }, 'bus: LISTEN session lost; reconnecting');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.ensureConnected().catch((err: unknown) => {
        this.logger.warn({ err }, 'bus: LISTEN reconnect failed');
        this.scheduleReconnect();
      });
    }, backoffMs(++this.failures));
    this.retry.unref();
  }

  private dispatch(channel: string, payload: string | undefined): void {
    for (const w of this.subscribers) {
      if (channel === MESSAGES_CHANNEL && payload !== undefined && w.topics.includes(payload)) w.onMessages();
      if (channel === GROUPS_CHANNEL && payload === w.groupId) w.onGroupChange();
    }
  }
}
