import { isAnonId } from './identifiers';
import type { KeyValueStore } from './storage';
import { readJSON, writeJSON } from './storage';
import type { Traits } from './types';
import { isObject, queryParam } from './util';

export interface Identity {
  anonymousId(): string;
  userId(): string | null;
  traits(): Traits;
  /** Persists the user id and traits: traits merge for the same user and replace for another. */
  setUser(userId: string, traits: Traits): Traits;
  /** Drops user id and traits and mints a new anonymous id. */
  reset(): void;
}

/**
 * The visitor's identity, persisted in storage so every tab of the origin
 * shares it. The anonymous id comes from storage; when none is stored, from a
 * valid `aid` query parameter (cross-domain hand-off); otherwise it is minted.
 */
export function createIdentity(store: KeyValueStore, prefix: string, search: string, mint: () => string): Identity {
  const aidKey = `${prefix}anonymous_id`;
  const uidKey = `${prefix}user_id`;
  const traitsKey = `${prefix}user_traits`;
  let anon = store.get(aidKey);
  if (!isAnonId(anon)) {
    const handedOver = queryParam(search, 'aid');
    anon = isAnonId(handedOver) ? handedOver : mint();
    store.set(aidKey, anon);
  }
  let current = anon;
  const identity: Identity = {
    anonymousId() {
      const stored = store.get(aidKey);
      if (isAnonId(stored)) current = stored;
      else store.set(aidKey, current);
      return current;
    },
    userId: () => store.get(uidKey),
    traits() {
      const t = readJSON<unknown>(store, traitsKey);
      return isObject(t) ? t : {};
    },
    setUser(userId, traits) {
      const merged = identity.userId() === userId ? { ...identity.traits(), ...traits } : { ...traits };
      store.set(uidKey, userId);
      writeJSON(store, traitsKey, merged);
      return merged;
    },
    reset() {
      store.remove(uidKey);
      store.remove(traitsKey);
      current = mint();
      store.set(aidKey, current);
    },
  };
  return identity;
}
