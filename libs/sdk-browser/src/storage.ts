import type { StorageLike } from './dom';

/** The key-value storage the library persists into (localStorage in a browser). */
export interface KeyValueStore {
  get(key: string): string | null;
  /** False when the write failed (quota, privacy mode). */
  set(key: string, value: string): boolean;
  remove(key: string): void;
  keys(): string[];
}

/** A store that lives as long as the page: the fallback when localStorage is unusable. */
export function memoryStore(): KeyValueStore {
  const map = new Map<string, string>();
  return {
    get: (key) => map.get(key) ?? null,
    set: (key, value) => (map.set(key, value), true),
    remove: (key) => void map.delete(key),
    keys: () => [...map.keys()],
  };
}

/**
 * Wraps a Web Storage object so that no access ever throws (sandboxed frames,
 * blocked cookies, full quota). Falls back to memory when it cannot be used at all.
 */
export function webStore(get: () => StorageLike | null | undefined): KeyValueStore {
  let storage: StorageLike | null | undefined;
  try {
    storage = get();
    if (storage) {
      storage.setItem('svc__probe', '1');
      storage.removeItem('svc__probe');
    }
  } catch {
    storage = undefined;
  }
  if (!storage) return memoryStore();
  const s = storage;
  return {
    get(key) {
      try {
        return s.getItem(key);
      } catch {
        return null;
      }
    },
    set(key, value) {
      try {
        s.setItem(key, value);
        return true;
      } catch {
        return false;
      }
    },
    remove(key) {
      try {
        s.removeItem(key);
      } catch {
        // nothing to do
      }
    },
    keys() {
      const out: string[] = [];
      try {
        for (let i = 0; i < s.length; i++) {
          const key = s.key(i);
          if (key !== null) out.push(key);
        }
      } catch {
        // nothing to list
      }
      return out;
    },
  };
}

/** Parsed JSON under `key`, or undefined when absent or unreadable. */
export function readJSON<T>(store: KeyValueStore, key: string): T | undefined {
  const raw = store.get(key);
  if (raw === null) return undefined;
  try {
    return JSON.parse(raw) as T;
  } catch {
    return undefined;
  }
}

export function writeJSON(store: KeyValueStore, key: string, value: unknown): boolean {
  return store.set(key, JSON.stringify(value));
}
