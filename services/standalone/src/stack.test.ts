import { describe, expect, it } from '@jest/globals';
import { serviceConfigSpec } from '@svc/service';
import { standaloneConfigSpec } from './config';
import { STACK_SERVICES } from './stack';
import { DEPLOYED_SERVICES } from './test-support/service-processes';

/** What a deployed service reads that the stack settles itself: each pool's size (startServices), and one process on the port. */
const SETTLED_BY_THE_STACK = new Set(['DB_POOL_MAX', 'GATEWAY_WORKERS']);

describe('the services the stack hosts', () => {
  it.each(STACK_SERVICES.map((definition) => [definition.name, definition] as const))('%s: every setting it reads is one the stack reads too', (_name, definition) => {
    const reads = Object.keys({ ...serviceConfigSpec, ...definition.configSpec }).filter((name) => !SETTLED_BY_THE_STACK.has(name));
    expect(reads.filter((name) => !(name in standaloneConfigSpec))).toEqual([]);
  });

  it('are the services deployed one per process, each once', () => {
    expect(STACK_SERVICES.map((d) => d.name).sort()).toEqual([...DEPLOYED_SERVICES].sort());
  });
});
