import type { Router } from 'express';
import { BodyLimitHints, EVENT_TYPES, Limits, Messages, type EventType } from '@svc/contracts';
import { HttpError, clientIp, isHttpError, methodNotAllowed, rejectOversizedContentLength } from '@svc/runtime';
import { ingestBatch, refusingUnconfirmedKeyFirst, type Admission, type GatewayDeps } from '../batch-route';
import { readSegmentBody } from './body';
import { fromSegment, type SegmentEnvelope } from './map-event';
import { authenticateWriteKey, writeKeyFromBody, writeKeyFromHeader } from './write-key';

/** Where the Segment-compatible routes live under the API's base path: a library's host is `{base_url}/segment`. */
export const SEGMENT_BASE_PATH = '/segment';

/**
 * Segment's HTTP tracking API beside /v1-batch, for the server libraries of
 * Segment, RudderStack and Jitsu: POST `/segment/v1/batch` and one route per
 * event type (`/segment/v1/track`, ...), and the short paths Segment's
 * browser library posts to (`/segment/v1/b`, `/segment/v1/t`, ...). Past the write key, the body and
 * the mapping (fromSegment), a request goes through the very steps of
 * /v1-batch (ingestBatch) and gets its answer: the same limits, checks,
 * envelope and topic. The libraries retry 5xx and 429 and give up on other
 * 4xx, which is what the statuses mean here too.
 */
export function mountSegmentRoutes(router: Router, deps: GatewayDeps): void {
  const now = deps.now ?? (() => new Date());
  const mount = (path: string, messagesOf: (body: unknown) => { messages: readonly unknown[]; type?: EventType }) => {
    router.post(`${SEGMENT_BASE_PATH}${path}`, rejectOversizedContentLength(Limits.batchBodyBytes, BodyLimitHints.batch), async (req, res) => {
      const started = performance.now();
      const ip = clientIp(req, deps.trustedProxies);
      // A key in the header is checked before the body is read, as on /v1-batch; one in the body only can be checked after.
      const admit = async (writeKey: string): Promise<Admission> => {
        const request = { headers: req.headers, clientIp: ip };
        return {
          key: await authenticateWriteKey(writeKey, request, deps.keys, { throttle: deps.failedAuth }),
          reauthenticate: () => authenticateWriteKey(writeKey, request, deps.keys, { fresh: true }),
        };
      };
      // A request that names no key where one is looked for counts against its address, as a key that does not verify does.
      const keyFrom = <T>(find: () => T): T => {
        try {
          return find();
        } catch (err) {
          if (isHttpError(err) && err.status === 401) deps.failedAuth.failed(ip);
          throw err;
        }
      };
      const source = keyFrom(() => writeKeyFromHeader(req.headers.authorization));
      const byHeader = source.kind === 'header' ? await admit(source.key) : undefined;
      // No key before the body: an address past its failed keys is refused before a byte of it is read or inflated.
      const refusal = byHeader ? undefined : deps.failedAuth.refusal(ip);
      if (refusal) throw refusal;
      // A key the body names first is checked from its first bytes: a wrong one is refused before the rest is read.
      let first: { key: string; admission: Admission } | undefined;
      const keyAtStart = async (key: string) => {
        first = { key, admission: await admit(key) };
      };
      const body = byHeader
        ? await refusingUnconfirmedKeyFirst(byHeader, () => readSegmentBody(req))
        : await readSegmentBody(req, { keyAtStart }).catch(async (err: unknown) => {
            if (first?.admission.key.unconfirmed) await first.admission.reauthenticate();
            throw err;
          });
      const bodyKey = byHeader ? undefined : keyFrom(() => writeKeyFromBody(body));
      // JSON takes the last of repeated members: the key that was checked must be the one the body names.
      if (first && bodyKey !== first.key) {
        deps.failedAuth.failed(ip);
        throw new HttpError(401, Messages.invalidApiKey);
      }
      const admission = byHeader ?? first?.admission ?? (await admit(bodyKey!));
      const { messages, type } = await refusingUnconfirmedKeyFirst(admission, async () => messagesOf(body));
      const receivedAt = now();
      const envelope = body as SegmentEnvelope;
      const batch = messages.map((message) => fromSegment(message, envelope, receivedAt, type));
      await ingestBatch(deps, { ...admission, ip, batch, started, receivedAt }, res);
    });
    router.all(`${SEGMENT_BASE_PATH}${path}`, methodNotAllowed(['POST']));
  };

  const batchOf = (body: unknown) => {
    const batch = (body as { batch?: unknown } | null)?.batch;
    if (typeof body !== 'object' || body === null || !Array.isArray(batch)) throw new HttpError(400, Messages.batchRequired);
    if (batch.length > Limits.batchMaxEvents) throw new HttpError(400, Messages.batchTooLarge);
    return { messages: batch };
  };
  const single = (type: EventType) => (body: unknown) => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, Messages.singleEventRequired);
    // The single event is also the envelope: its own sentAt, context and integrations.
    return { messages: [body], type };
  };
  mount('/v1/batch', batchOf);
  for (const type of EVENT_TYPES) mount(`/v1/${type}`, single(type));
  // Segment's own browser library (@segment/analytics-next) posts each call to the first letter of its type
  // (`/t`, `/p`, `/i`, `/a`, `/g`, `/s`), or a batch to `/b`, under its apiHost: `{base_url}/segment/v1`.
  mount('/v1/b', batchOf);
  for (const type of EVENT_TYPES) mount(`/v1/${type[0]}`, single(type));
}
