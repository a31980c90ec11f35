/**
 * A browser stand-in for unit tests in Node: a manual clock with timers, Web
 * Storage over a Map, a scripted fetch, Web Locks, history and location.
 * Several fake tabs can share one storage and one lock manager.
 */
import { randomUUID } from 'node:crypto';
import type { Env, LocksLike, RequestInitLike, ResponseLike, StorageLike, WindowLike } from '../dom';

export const flushMicrotasks = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class FakeClock {
  private timers: Array<{ id: number; at: number; fn: () => void }> = [];
  private nextId = 1;
  constructor(public t = Date.parse('2026-03-01T12:00:00.000Z')) {}
  now = (): number => this.t;
  setTimeout = (fn: () => void, ms: number): number => {
    const id = this.nextId++;
    this.timers.push({ id, at: this.t + Math.max(0, ms || 0), fn });
    return id;
  };
  clearTimeout = (id: unknown): void => {
    this.timers = this.timers.filter((x) => x.id !== id);
  };
  pending(): number {
    return this.timers.length;
  }
  /** Moves time forward, running every timer that falls due (and the promise jobs they start). */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    await flushMicrotasks();
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = Math.max(this.t, next.at);
      next.fn();
      await flushMicrotasks();
    }
    this.t = end;
    await flushMicrotasks();
  }
}

export class FakeStorage implements StorageLike {
  readonly map = new Map<string, string>();
  get length(): number {
    return this.map.size;
  }
  key(index: number): string | null {
    return [...this.map.keys()][index] ?? null;
  }
  getItem(key: string): string | null {
    return this.map.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.map.set(key, String(value));
  }
  removeItem(key: string): void {
    this.map.delete(key);
  }
  clear(): void {
    this.map.clear();
  }
}

/** Web Locks with exclusive locks only (request waits; ifAvailable does not). */
export class FakeLocks implements LocksLike {
  readonly held = new Set<string>();
  private waiting = new Map<string, Array<() => void>>();
  request(name: string, options: { ifAvailable?: boolean }, callback: (lock: unknown) => unknown): Promise<unknown> {
    const run = async (): Promise<unknown> => {
      this.held.add(name);
      try {
        return await callback({ name });
      } finally {
        this.held.delete(name);
        this.waiting.get(name)?.shift()?.();
      }
    };
    if (!this.held.has(name)) return run();
    if (options.ifAvailable) return Promise.resolve(callback(null));
    return new Promise<void>((resolve) => {
      const queue = this.waiting.get(name) ?? [];
      queue.push(resolve);
      this.waiting.set(name, queue);
    }).then(run);
  }
  /** Simulates a tab going away: its locks are released. */
  release(name: string): void {
    this.held.delete(name);
  }
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Sent {
  url: string;
  init: RequestInitLike;
  body: { batch?: Array<Record<string, unknown>> } & Record<string, unknown>;
}

type Listener = (event: unknown) => void;

class Target {
  listeners = new Map<string, Listener[]>();
  addEventListener(type: string, listener: (event: never) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener as Listener]);
  }
  dispatch(type: string, event: unknown = { type }): void {
    for (const l of this.listeners.get(type) ?? []) l(event);
  }
}

export interface FakeTabOptions {
  url?: string;
  referrer?: string;
  title?: string;
  storage?: FakeStorage;
  locks?: FakeLocks | null;
  clock?: FakeClock;
  userAgent?: string;
  doNotTrack?: string;
  globalPrivacyControl?: boolean;
  /** Answers each request; default 200 with a success body. A thrown error is a network failure. */
  reply?: (sent: Sent) => Reply | Promise<Reply>;
}

const CHROME_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';

/** One fake browser tab. */
export class FakeTab {
  readonly clock: FakeClock;
  readonly storage: FakeStorage;
  readonly locks: FakeLocks | null;
  readonly sent: Sent[] = [];
  readonly doc = new Target() as Target & { title: string; referrer: string; visibilityState: string; documentElement: { lang: string } };
  readonly win: WindowLike & Target;
  reply: (sent: Sent) => Reply | Promise<Reply>;
  private href = '';

  constructor(options: FakeTabOptions = {}) {
    this.clock = options.clock ?? new FakeClock();
    this.storage = options.storage ?? new FakeStorage();
    this.locks = options.locks === undefined ? new FakeLocks() : options.locks;
    this.reply = options.reply ?? ((sent) => ({ status: 200, body: { success: true, processed: sent.body.batch?.length ?? 0, failed: 0, duration_ms: 1 } }));
    Object.assign(this.doc, { title: options.title ?? 'Test page', referrer: options.referrer ?? '', visibilityState: 'visible', documentElement: { lang: 'en' } });
    const url = (): URL => new URL(this.href);
    const location = {};
    for (const key of ['href', 'pathname', 'search', 'hash', 'hostname'] as const) Object.defineProperty(location, key, { get: () => url()[key] });
    const win = new Target() as WindowLike & Target;
    Object.assign(win, {
      location,
      document: this.doc,
      history: {
        pushState: (_s: unknown, _t: unknown, url?: string) => url && this.navigate(url),
        replaceState: (_s: unknown, _t: unknown, url?: string) => url && this.navigate(url),
      },
      navigator: {
        userAgent: options.userAgent ?? CHROME_UA,
        language: 'en-US',
        languages: ['en-US', 'en'],
        platform: 'Linux x86_64',
        onLine: true,
        hardwareConcurrency: 8,
        doNotTrack: options.doNotTrack ?? null,
        globalPrivacyControl: options.globalPrivacyControl,
        ...(this.locks ? { locks: this.locks } : {}),
      },
      screen: { width: 1920, height: 1080, colorDepth: 24 },
      innerWidth: 1280,
      innerHeight: 720,
      devicePixelRatio: 2,
      localStorage: this.storage,
      crypto: { randomUUID },
      Request: { prototype: { keepalive: false } },
      console: { log: () => undefined, warn: () => undefined, error: () => undefined },
      setTimeout: this.clock.setTimeout,
      clearTimeout: this.clock.clearTimeout,
      fetch: async (url: string, init: RequestInitLike): Promise<ResponseLike> => {
        const sent: Sent = { url, init, body: JSON.parse(init.body) as Sent['body'] };
        this.sent.push(sent);
        const r = await this.reply(sent);
        return { status: r.status, text: async () => (r.body === undefined ? '' : JSON.stringify(r.body)), headers: { get: (n: string) => r.headers?.[n] ?? null } };
      },
    });
    this.win = win;
    this.href = new URL(options.url ?? 'https://shop.example/products?id=7').href;
  }

  get env(): Env {
    return { win: this.win, now: this.clock.now, random: () => 0.5 };
  }

  /** Changes the URL the way history.pushState does (no popstate). */
  navigate(url: string): void {
    this.href = new URL(url, this.href).href;
  }

  /** Events sent to the batch endpoint so far, in order. */
  events(): Array<Record<string, unknown>> {
    return this.sent.filter((s) => !s.url.endsWith('/v1-consent')).flatMap((s) => s.body.batch ?? []);
  }

  consentRecords(): Array<Record<string, unknown>> {
    return this.sent.filter((s) => s.url.endsWith('/v1-consent')).map((s) => s.body);
  }

  hide(): void {
    this.doc.visibilityState = 'hidden';
    this.doc.dispatch('visibilitychange');
  }

  pagehide(): void {
    this.win.dispatch('pagehide', { persisted: false });
  }
}
