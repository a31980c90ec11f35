import { randomBytes, randomUUID } from 'node:crypto';
import type { InboundEvent, RawEventEnvelope } from '@svc/contracts';

/** The client address every test envelope comes from (in its context too, as the gateway stores it). */
export const TEST_CLIENT_IP = '203.0.113.7';

/**
 * A raw-topic envelope as the gateway writes it, for tests that feed the
 * resolver directly: a fresh messageId and anonymousId unless the event
 * names them, timestamped now.
 */
export function rawEnvelope(orgId: string, event: Partial<InboundEvent> & Pick<InboundEvent, 'type'>, receivedAt = new Date()): RawEventEnvelope {
  return {
    v: 1,
    orgId,
    receivedAt: receivedAt.toISOString(),
    requestId: 'req-test',
    clientIp: TEST_CLIENT_IP,
    event: {
      messageId: randomUUID(),
      anonymousId: `anon-${randomBytes(4).toString('hex')}`,
      timestamp: new Date().toISOString(),
      ...event,
      context: { ip_address: TEST_CLIENT_IP, ...event.context },
    } as InboundEvent,
  };
}
