/**
 * The small slice of the browser platform this library touches, declared here
 * instead of pulling the DOM lib into the repo-wide type-check (whose programs are
 * Node programs). Every access to `window` goes through these shapes, which also
 * lets unit tests run in Node against plain objects.
 */

export interface ListenerOptions {
  capture?: boolean;
  passive?: boolean;
}

export interface EventTargetLike {
  addEventListener<E>(type: string, listener: (event: E) => void, options?: boolean | ListenerOptions): void;
}

export interface ElementLike {
  tagName?: string;
  id?: string;
  href?: string;
  type?: string;
  value?: string;
  textContent?: string | null;
  parentElement?: ElementLike | null;
  getAttribute?(name: string): string | null;
  hasAttribute?(name: string): boolean;
}

export interface LocationLike {
  href: string;
  pathname: string;
  search: string;
  hash: string;
  hostname: string;
}

export interface HistoryLike {
  pushState(...args: unknown[]): void;
  replaceState(...args: unknown[]): void;
}

export interface DocumentLike extends EventTargetLike {
  title?: string;
  referrer?: string;
  visibilityState?: string;
  documentElement?: { lang?: string } | null;
}

export interface ConnectionLike {
  type?: string;
  saveData?: boolean;
}

export interface LocksLike {
  request(name: string, options: { ifAvailable?: boolean }, callback: (lock: unknown) => unknown): Promise<unknown>;
}

export interface NavigatorLike {
  /** Queues a POST that outlives the page; false when the browser refused it (over its budget). */
  sendBeacon?(url: string, data: string): boolean;
  userAgent?: string;
  language?: string;
  languages?: readonly string[];
  platform?: string;
  vendor?: string;
  doNotTrack?: string | null;
  msDoNotTrack?: string | null;
  globalPrivacyControl?: boolean;
  onLine?: boolean;
  connection?: ConnectionLike;
  userAgentData?: { brands?: ReadonlyArray<{ brand: string; version: string }>; mobile?: boolean; platform?: string };
  hardwareConcurrency?: number;
  deviceMemory?: number;
  maxTouchPoints?: number;
  locks?: LocksLike;
}

export interface ScreenLike {
  width?: number;
  height?: number;
  colorDepth?: number;
}

export interface StorageLike {
  readonly length: number;
  key(index: number): string | null;
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export interface ResponseLike {
  status: number;
  text(): Promise<string>;
  headers?: { get(name: string): string | null };
}

export interface RequestInitLike {
  method: string;
  headers: Record<string, string>;
  body: string;
  keepalive?: boolean;
  credentials?: string;
}

export interface ConsoleLike {
  log(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}

export interface CryptoLike {
  randomUUID?(): string;
  getRandomValues?(array: Uint8Array): Uint8Array;
}

export interface WindowLike extends EventTargetLike {
  location?: LocationLike;
  history?: HistoryLike;
  document?: DocumentLike;
  navigator?: NavigatorLike;
  screen?: ScreenLike;
  innerWidth?: number;
  innerHeight?: number;
  devicePixelRatio?: number;
  localStorage?: StorageLike | null;
  crypto?: CryptoLike;
  console?: ConsoleLike;
  doNotTrack?: string | null;
  fetch?(url: string, init: RequestInitLike): Promise<ResponseLike>;
  /** Only probed for keepalive support. */
  Request?: { prototype: object };
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** What the client reads from its surroundings: the window plus a clock and a random source. */
export interface Env {
  win: WindowLike;
  now(): number;
  random(): number;
}
