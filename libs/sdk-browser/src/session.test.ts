import { describe, expect, it } from '@jest/globals';
import { createSessionManager } from './session';
import { memoryStore } from './storage';

describe('sessions', () => {
  it('counts events and pageviews and rolls over after the idle timeout', () => {
    let t = Date.parse('2026-01-01T00:00:00Z');
    let n = 0;
    const store = memoryStore();
    const sessions = createSessionManager(store, 'svc_session', () => t, 30 * 60_000, () => `s${++n}`);
    expect(sessions.currentId()).toBeUndefined();
    expect(sessions.touch(true)).toEqual({ id: 's1', started_at: '2026-01-01T00:00:00.000Z', page_views: 1, events_count: 1, is_new_session: true });
    t += 29 * 60_000;
    expect(sessions.touch(false)).toMatchObject({ id: 's1', page_views: 1, events_count: 2, is_new_session: false });
    t += 29 * 60_000; // idle time counts from the last event, not the start
    expect(sessions.touch(true)).toMatchObject({ id: 's1', page_views: 2, events_count: 3 });
    t += 30 * 60_000 + 1;
    expect(sessions.currentId()).toBeUndefined();
    expect(sessions.touch(false)).toMatchObject({ id: 's2', page_views: 0, events_count: 1, is_new_session: true });
    sessions.reset();
    expect(sessions.touch(false)).toMatchObject({ id: 's3', is_new_session: true });
  });

  it('is shared through storage by every tab', () => {
    const t = 1000;
    const store = memoryStore();
    let n = 0;
    const a = createSessionManager(store, 'k', () => t, 60_000, () => `s${++n}`);
    const b = createSessionManager(store, 'k', () => t, 60_000, () => `s${++n}`);
    expect(a.touch(true).id).toBe('s1');
    expect(b.touch(true)).toMatchObject({ id: 's1', page_views: 2 });
  });
});
