import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { Topics, firstSchemaError, type RawEventEnvelope } from '@svc/contracts';
import { UnreadableRawEventError, isSealed, openRawEvent, openRawLog, sealRawEvent } from './raw-log-seal';

const orgId = '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f';
const envelope: RawEventEnvelope = {
  v: 1,
  orgId,
  receivedAt: '2026-11-27T10:00:00.000Z',
  requestId: 'req-1',
  clientIp: '203.0.113.9',
  originalTimestamp: '2026-11-27T11:00:00.000Z',
  event: { type: 'identify', messageId: 'm-1', anonymousId: 'anon-1', userId: 'u-1', timestamp: '2026-11-27T10:00:00.000Z', traits: { email: 'ann@example.com' }, context: { ip_address: '203.0.113.9' } },
};
const dataKey = () => ({ id: randomUUID(), key: randomBytes(32) });

describe('sealing raw events', () => {
  it('seals the whole content and keeps only the routing facts in clear; it opens back to the same envelope', () => {
    const key = dataKey();
    const sealed = sealRawEvent(envelope, key);
    expect(Object.keys(sealed).sort()).toEqual(['keyId', 'orgId', 'receivedAt', 'requestId', 'sealed', 'v']);
    expect(sealed).toMatchObject({ v: 2, orgId, receivedAt: envelope.receivedAt, requestId: 'req-1', keyId: key.id });
    expect(firstSchemaError(Topics.eventsRaw.schema, sealed)).toBeUndefined();
    for (const clear of ['anon-1', 'u-1', 'ann@example.com', '203.0.113.9', 'm-1']) expect(JSON.stringify(sealed)).not.toContain(clear);
    expect(isSealed(sealed)).toBe(true);
    expect(isSealed(envelope)).toBe(false);
    expect(openRawEvent(sealed, key.key)).toEqual(envelope);
  });

  it('property: any valid envelope survives sealing and opening unchanged', () => {
    const key = dataKey();
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }), fc.dictionary(fc.string(), fc.jsonValue()), fc.option(fc.ipV4(), { nil: undefined }), (anonymousId, properties, ip) => {
        const e: RawEventEnvelope = { ...envelope, clientIp: ip ?? '::1', event: { type: 'track', event: 'x', messageId: 'm', anonymousId, timestamp: envelope.receivedAt, properties } };
        delete (e as Partial<RawEventEnvelope>).originalTimestamp;
        expect(openRawEvent(sealRawEvent(e, key), key.key)).toEqual(JSON.parse(JSON.stringify(e)));
      }),
      { seed: 30, numRuns: 200 },
    );
  });

  it.each([
    ['another key', (s: ReturnType<typeof sealRawEvent>) => ({ ...s }), randomBytes(32)],
    ['another organisation', (s: ReturnType<typeof sealRawEvent>) => ({ ...s, orgId: randomUUID() }), undefined],
    ['another receive time', (s: ReturnType<typeof sealRawEvent>) => ({ ...s, receivedAt: '2026-11-27T10:00:01.000Z' }), undefined],
    ['another key id', (s: ReturnType<typeof sealRawEvent>) => ({ ...s, keyId: randomUUID() }), undefined],
    ['a flipped byte', (s: ReturnType<typeof sealRawEvent>) => ({ ...s, sealed: flip(s.sealed) }), undefined],
  ])('does not open with %s', (_what, change, otherKey) => {
    const key = dataKey();
    expect(() => openRawEvent(change(sealRawEvent(envelope, key)), otherKey ?? key.key)).toThrow(UnreadableRawEventError);
  });

  it('opens a run of messages with one key read: legacy clear ones as they are, those whose key is gone counted erased', async () => {
    const kept = dataKey();
    const gone = dataKey();
    const reads: string[][] = [];
    const keys = { read: async (wanted: ReadonlyArray<{ orgId: string; keyId: string }>) => (reads.push(wanted.map((w) => w.keyId)), new Map([[kept.id, kept.key]])) };
    const opened = await openRawLog(keys, [sealRawEvent(envelope, kept), envelope, sealRawEvent(envelope, gone), sealRawEvent(envelope, kept)]);
    expect(opened).toEqual({ events: [envelope, envelope, envelope], erased: 1 });
    expect(reads).toEqual([[kept.id, gone.id, kept.id]]);
    expect(await openRawLog(keys, [envelope])).toEqual({ events: [envelope], erased: 0 });
    expect(reads).toHaveLength(1);
  });
});

function flip(base64: string): string {
  const bytes = Buffer.from(base64, 'base64');
  bytes[bytes.length - 1]! ^= 1;
  return bytes.toString('base64');
}
