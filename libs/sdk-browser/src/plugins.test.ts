import { describe, expect, it, jest } from '@jest/globals';
import { createPluginHost } from './plugins';
import type { SvcClient, SvcEvent } from './types';

const event: SvcEvent = { type: 'track', event: 'x', messageId: 'm', anonymousId: 'a', timestamp: 't', context: {} };

describe('plugins', () => {
  it('chains beforeTrack: null drops, an event replaces, undefined keeps', () => {
    const errors: string[] = [];
    const host = createPluginHost((name, hook) => errors.push(`${name}.${hook}`));
    host.add({ name: 'keep', beforeTrack: () => undefined });
    host.add({ name: 'tag', beforeTrack: (e) => ({ ...e, properties: { tagged: true } }) });
    host.add({ name: 'boom', beforeTrack: () => { throw new Error('x'); } });
    expect(host.beforeTrack(event)).toEqual({ ...event, properties: { tagged: true } });
    expect(errors).toEqual(['boom.beforeTrack']);
    host.add({ name: 'drop', beforeTrack: (e) => (e.event === 'secret' ? null : e) });
    expect(host.beforeTrack({ ...event, event: 'secret' })).toEqual({ droppedBy: 'drop' });
  });

  it('ignores a second plugin of the same name and rejects nameless ones', () => {
    const host = createPluginHost(() => undefined);
    expect(host.add({ name: 'a' })).toBe(true);
    expect(host.add({ name: 'a' })).toBe(false);
    expect(() => host.add({} as { name: string })).toThrow('needs a name');
  });

  it('initializes (awaiting async hooks), calls onIdentify and onReset, never afterTrack', async () => {
    const host = createPluginHost(() => undefined);
    const afterTrack = jest.fn();
    const calls: string[] = [];
    const plugin = {
      name: 'p',
      initialize: async () => {
        await new Promise((r) => setTimeout(r, 5));
        calls.push('init');
      },
      onIdentify: (id: string, traits: Record<string, unknown>) => calls.push(`identify:${id}:${JSON.stringify(traits)}`),
      onReset: () => calls.push('reset'),
      afterTrack,
    };
    host.add(plugin);
    await host.initialize(host.list(), {} as SvcClient);
    host.beforeTrack(event);
    host.onIdentify('u1', { plan: 'pro' });
    host.onReset();
    expect(calls).toEqual(['init', 'identify:u1:{"plan":"pro"}', 'reset']);
    expect(afterTrack).not.toHaveBeenCalled();
  });
});
