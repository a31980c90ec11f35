import type { ConsentDecision } from '@svc/contracts';
import type { KeyValueStore } from './storage';
import { readJSON, writeJSON } from './storage';
import type { SendOutcome } from './transport';
import type { ConsentPurpose } from './types';
import { isObject } from './util';

export const PURPOSES: readonly ConsentPurpose[] = ['analytics', 'fingerprinting', 'identity'];

export type ConsentSource = 'sdk' | 'banner';

interface StoredDecision {
  /** granted */
  g: boolean;
  /** decided at (ISO 8601) */
  t: string;
  s: ConsentSource;
}

export interface ConsentStore {
  /** The local decision for a purpose: true, false, or undefined when none was made. */
  get(purpose: ConsentPurpose): boolean | undefined;
  set(purpose: ConsentPurpose, granted: boolean, source: ConsentSource, timestamp: string): void;
  /** Every purpose decided so far, as context.consent carries them. */
  decided(): Partial<Record<ConsentPurpose, boolean>>;
}

export function isPurpose(value: unknown): value is ConsentPurpose {
  return PURPOSES.includes(value as ConsentPurpose);
}

/** Consent decisions of this browser, in storage (they survive reset(): they belong to the device's user). */
export function createConsentStore(store: KeyValueStore, key: string): ConsentStore {
  const all = (): Partial<Record<ConsentPurpose, StoredDecision>> => {
    const stored = readJSON<unknown>(store, key);
    return isObject(stored) ? (stored as Partial<Record<ConsentPurpose, StoredDecision>>) : {};
  };
  return {
    get: (purpose) => {
      const granted = all()[purpose]?.g;
      return typeof granted === 'boolean' ? granted : undefined;
    },
    set(purpose, granted, source, timestamp) {
      writeJSON(store, key, { ...all(), [purpose]: { g: granted, t: timestamp, s: source } });
    },
    decided() {
      const out: Partial<Record<ConsentPurpose, boolean>> = {};
      const stored = all();
      for (const p of PURPOSES) {
        const granted = stored[p]?.g;
        if (typeof granted === 'boolean') out[p] = granted;
      }
      return out;
    },
  };
}

/** The POST /v1-consent body. */
export interface ConsentBody {
  anonymousId: string;
  userId: string | null;
  purposes: Partial<Record<ConsentPurpose, boolean>>;
  source: ConsentSource;
  timestamp: string;
}

/** Compile-time proof that the body is the contract's ConsentDecision (a type-only import: nothing of contracts is bundled). */
type Assert<T extends true> = T;
type _ConsentBodyIsConsentDecision = Assert<ConsentBody extends ConsentDecision ? true : false>;

export function consentRecord(
  anonymousId: string,
  userId: string | null,
  purposes: Partial<Record<ConsentPurpose, boolean>>,
  source: ConsentSource,
  timestamp: string,
): ConsentBody {
  return { anonymousId, userId, purposes, source, timestamp };
}

interface OutboxItem {
  id: string;
  r: ConsentBody;
}

export interface ConsentSender {
  /** Stores the record in the outbox and sends it; it stays there until a 2xx or 4xx answer. */
  send(record: ConsentBody): void;
  /** Re-sends what an earlier page could not deliver. */
  resend(): void;
}

/** Best-effort delivery of consent records: one attempt now, another at the next init when that failed transiently. */
export function createConsentSender(
  store: KeyValueStore,
  key: string,
  post: (body: string) => Promise<SendOutcome>,
  newId: () => string,
  log: (...args: unknown[]) => void,
): ConsentSender {
  const outbox = (): OutboxItem[] => {
    const stored = readJSON<unknown>(store, key);
    return Array.isArray(stored) ? (stored as OutboxItem[]) : [];
  };
  const save = (items: OutboxItem[]): void => {
    if (items.length) writeJSON(store, key, items.slice(-20));
    else store.remove(key);
  };
  const deliver = (item: OutboxItem): void => {
    void post(JSON.stringify(item.r)).then((outcome) => {
      if (!outcome.ok && outcome.retry) return log('consent record not delivered, kept for later:', outcome.message);
      if (!outcome.ok) log('consent record rejected:', outcome.status, outcome.message);
      save(outbox().filter((x) => x.id !== item.id));
    });
  };
  return {
    send(record) {
      const item = { id: newId(), r: record };
      save([...outbox(), item]);
      deliver(item);
    },
    resend() {
      for (const item of outbox()) deliver(item);
    },
  };
}
