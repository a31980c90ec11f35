import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { RawEventEnvelopeSchema, validatorFor } from '@svc/contracts';
import { batch } from '@svc/testkit';
import { prepareEvents } from './prepare-events';

describe('prepareEvents: the gateway and the log cannot disagree about an event', () => {
  const busAccepts = validatorFor(RawEventEnvelopeSchema);
  const facts = { orgId: '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f', requestId: 'req-1', clientIp: '203.0.113.9', receivedAt: new Date('2026-01-01T00:00:00Z') };

  it('every envelope it prepares passes the events.raw schema the bus enforces, and every entry is accounted for (fixed seed)', () => {
    fc.assert(
      fc.property(batch(30), (sent) => {
        const wire = JSON.parse(JSON.stringify(sent)) as unknown[];
        const prepared = prepareEvents(wire, facts);
        for (const { envelope } of prepared.events) expect(busAccepts(envelope)).toBe(true);
        const indexes = [...prepared.events.map((e) => e.index), ...prepared.failures.map((f) => f.index)].sort((a, b) => a - b);
        expect(indexes).toEqual(wire.map((_, i) => i));
      }),
      { seed: 15, numRuns: 400 },
    );
  });
});
