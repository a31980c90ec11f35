import type { KeyValueStore } from './storage';
import { readJSON, writeJSON } from './storage';
import type { SessionContext } from './types';

interface StoredSession {
  id: string;
  /** started at (ms) */
  s: number;
  /** last activity (ms) */
  l: number;
  /** page views */
  p: number;
  /** events */
  e: number;
}

export interface SessionManager {
  /** Records one event (a pageview when `isPage`), rolling over to a new session after the idle timeout. */
  touch(isPage: boolean): SessionContext;
  /** The current session's id, when one is running. */
  currentId(): string | undefined;
  /** Ends the current session; the next event starts a new one. */
  reset(): void;
}

/**
 * Sessions shared by every tab of the origin (the state lives in storage): a
 * session ends after `timeoutMs` without any event.
 */
export function createSessionManager(store: KeyValueStore, key: string, now: () => number, timeoutMs: number, newId: () => string): SessionManager {
  const load = (): StoredSession | undefined => {
    const s = readJSON<StoredSession>(store, key);
    return s && typeof s.id === 'string' && typeof s.l === 'number' && now() - s.l <= timeoutMs ? s : undefined;
  };
  return {
    touch(isPage) {
      const t = now();
      let s = load();
      const isNew = !s;
      if (!s) s = { id: newId(), s: t, l: t, p: 0, e: 0 };
      s.l = Math.max(s.l, t);
      s.e++;
      if (isPage) s.p++;
      writeJSON(store, key, s);
      return { id: s.id, started_at: new Date(s.s).toISOString(), page_views: s.p, events_count: s.e, is_new_session: isNew };
    },
    currentId: () => load()?.id,
    reset: () => store.remove(key),
  };
}
