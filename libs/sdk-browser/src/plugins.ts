import type { SvcClient, SvcEvent, SvcPlugin, Traits } from './types';
import { isObject } from './util';

export interface PluginHost {
  /** Registers a plugin (a second one with the same name is ignored); false when ignored. */
  add(plugin: SvcPlugin): boolean;
  /** Runs `initialize` of the given plugins; the promise settles when all have. */
  initialize(plugins: readonly SvcPlugin[], client: SvcClient): Promise<void>;
  list(): readonly SvcPlugin[];
  /** Runs every beforeTrack in order: the event to queue, or the name of the plugin that dropped it. */
  beforeTrack(event: SvcEvent): SvcEvent | { droppedBy: string };
  onIdentify(userId: string, traits: Traits): void;
  onReset(): void;
}

const looksLikeEvent = (value: unknown): value is SvcEvent =>
  isObject(value) && typeof value.type === 'string' && typeof value.messageId === 'string' && typeof value.anonymousId === 'string' && typeof value.timestamp === 'string';

/**
 * The plugin pipeline. A hook that throws is logged and skipped (the event goes
 * on unchanged). afterTrack is never invoked.
 */
export function createPluginHost(report: (plugin: string, hook: string, error: unknown) => void): PluginHost {
  const plugins: SvcPlugin[] = [];
  const call = (plugin: SvcPlugin, hook: 'onIdentify' | 'onReset', ...args: unknown[]): void => {
    try {
      (plugin[hook] as ((...a: unknown[]) => void) | undefined)?.apply(plugin, args);
    } catch (err) {
      report(plugin.name, hook, err);
    }
  };
  return {
    add(plugin) {
      if (!isObject(plugin) || typeof plugin.name !== 'string' || !plugin.name) throw new TypeError('svc: a plugin needs a name');
      if (plugins.some((p) => p.name === plugin.name)) return false;
      plugins.push(plugin);
      return true;
    },
    async initialize(list, client) {
      await Promise.all(
        list.map(async (plugin) => {
          try {
            await plugin.initialize?.(client);
          } catch (err) {
            report(plugin.name, 'initialize', err);
          }
        }),
      );
    },
    list: () => plugins,
    beforeTrack(event) {
      let current = event;
      for (const plugin of plugins) {
        if (typeof plugin.beforeTrack !== 'function') continue;
        let next: unknown;
        try {
          next = plugin.beforeTrack(current);
        } catch (err) {
          report(plugin.name, 'beforeTrack', err);
          continue;
        }
        if (next === null) return { droppedBy: plugin.name };
        if (looksLikeEvent(next)) current = next;
      }
      return current;
    },
    onIdentify: (userId, traits) => plugins.forEach((p) => call(p, 'onIdentify', userId, traits)),
    onReset: () => plugins.forEach((p) => call(p, 'onReset')),
  };
}
