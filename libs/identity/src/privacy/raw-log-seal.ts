import { RawEventContentSchema, firstSchemaError, type RawEventContent, type RawEventEnvelope, type RawEventSealed, type RawLogMessage } from '@svc/contracts';
import { SealedBlobError, openBytes, sealBytes } from '@svc/runtime';
import type { DataKey, DataKeyReader } from './subject-keys';

/**
 * Sealing and opening events.raw messages (the contract: RawEventSealedSchema
 * in libs/contracts). Pure: the keys come from subject-keys.ts.
 *
 * The clear facts (organisation, receive time, request id, key id) are the
 * associated data, so a sealed content moved onto other facts does not open.
 */

const associated = (m: Pick<RawEventSealed, 'orgId' | 'keyId' | 'receivedAt' | 'requestId'>): string =>
  `events.raw\u0000${m.orgId}\u0000${m.keyId}\u0000${m.receivedAt}\u0000${m.requestId}`;

export function sealRawEvent(envelope: RawEventEnvelope, key: DataKey): RawEventSealed {
  const { orgId, receivedAt, requestId, clientIp, originalTimestamp, event } = envelope;
  const content: RawEventContent = originalTimestamp === undefined ? { clientIp, event } : { clientIp, originalTimestamp, event };
  const facts = { orgId, receivedAt, requestId, keyId: key.id };
  return { v: 2, ...facts, sealed: sealBytes(key.key, associated(facts), JSON.stringify(content)).toString('base64') };
}

/** A sealed event that does not open with its own key, or opens to something that is not a raw event: that event's fault alone. */
export class UnreadableRawEventError extends Error {
  override name = 'UnreadableRawEventError';
}

/**
 * The event in clear. Throws UnreadableRawEventError when the content does
 * not open under `key` (tampered, or moved onto other facts) or opens to
 * something that is not a raw event's content (only a holder of the master
 * key could write one; checked all the same, as the bus checks every
 * message it reads).
 */
export function openRawEvent(message: RawEventSealed, key: Buffer): RawEventEnvelope {
  let content: unknown;
  try {
    content = JSON.parse(openBytes(key, associated(message), Buffer.from(message.sealed, 'base64')).toString('utf8'));
  } catch (err) {
    if (err instanceof SealedBlobError || err instanceof SyntaxError) throw new UnreadableRawEventError(`events.raw: a sealed event does not open with its key ${message.keyId}`, { cause: err });
    throw err;
  }
  const problem = firstSchemaError(RawEventContentSchema, content);
  if (problem !== undefined) throw new UnreadableRawEventError(`events.raw: sealed content of key ${message.keyId} is not a raw event: ${problem}`);
  const { orgId, receivedAt, requestId } = message;
  return { v: 1, orgId, receivedAt, requestId, ...(content as RawEventContent) };
}

export const isSealed = (m: RawLogMessage): m is RawEventSealed => m.v === 2;

export interface OpenedRawLog {
  /** The messages in clear, in order; a legacy clear message as it is. */
  events: RawEventEnvelope[];
  /** Messages whose key is gone: their subject was erased. */
  erased: number;
}

/** Opens a run of events.raw messages with one key read for all of them. */
export async function openRawLog(keys: Pick<DataKeyReader, 'read'>, messages: readonly RawLogMessage[]): Promise<OpenedRawLog> {
  const sealed = messages.filter(isSealed);
  const held = sealed.length === 0 ? new Map<string, Buffer>() : await keys.read(sealed.map((m) => ({ orgId: m.orgId, keyId: m.keyId })));
  const out: OpenedRawLog = { events: [], erased: 0 };
  for (const m of messages) {
    if (!isSealed(m)) out.events.push(m);
    else {
      const key = held.get(m.keyId);
      if (key) out.events.push(openRawEvent(m, key));
      else out.erased++;
    }
  }
  return out;
}
