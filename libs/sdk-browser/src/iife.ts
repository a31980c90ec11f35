/**
 * Entry of the script-tag build: installs the singleton as `window.svc` and
 * replays the calls the loader snippet queued before the script arrived.
 */
import { svc } from './index';
import type { SvcClient } from './types';

type QueuedCall = [string, unknown[]];
const g = globalThis as unknown as { svc?: { _q?: QueuedCall[] } | SvcClient };
const stub = g.svc as { _q?: QueuedCall[] } | undefined;
g.svc = svc;
if (stub && Array.isArray(stub._q)) {
  for (const [name, args] of stub._q) {
    try {
      const [head, method] = name.split('.');
      const target = (method ? (svc as unknown as Record<string, unknown>)[head ?? ''] : svc) as Record<string, unknown>;
      const fn = target[method ?? head ?? ''];
      if (typeof fn === 'function') (fn as (...a: unknown[]) => unknown)(...args);
    } catch (err) {
      (globalThis as unknown as { console?: { error(...a: unknown[]): void } }).console?.error('[svc] queued call failed:', name, err);
    }
  }
}
