import type { Router } from 'express';
import { BodyLimitHints, ERASABLE_IDENTIFIER_TYPES, Limits, Messages, toStorable, type ErasableIdentifierType, type ErasureView } from '@svc/contracts';
import {
  HttpError,
  readJsonBody,
  sendJson,
  type Logger,
} from '@svc/runtime';
import { KeyRequirements, admit, type AdmissionDeps } from '@svc/accounts';
import { normaliseIdentifier, type ErasureRequestResult, type ErasureTarget, type PhoneDefault } from '@svc/identity';

/**
 * The erasure routes under `/v1-profiles` (additive within v1; admin key
 * only; their own rate bucket, 10 per minute per (organisation, client IP),
 * tightened by the key's cap; 256 KiB body limit):
 *
 *   POST /:id/erase         erase the person of profile :id (UUID or canonical_id)   body {reason?}
 *   POST /erase             erase the person an identifier names                      body {one of user_id, anonymous_id, email, phone; reason?}
 *   GET  /:id/erase         the request and its status: pending → done | failed
 *                           :id = the erasure's id, or the profile's (id or canonical_id, also after it is erased)
 *
 * A request is recorded (who, when, what, scope) and answered 202 with its
 * status `pending`; the identity resolver carries it out from
 * profiles.erasure-requests. A second request for a profile already under
 * an erasure (pending or done) is 409 `Erasure already requested for this
 * profile` with the first one's `erasure_id`; an unknown or
 * other-organisation profile, or an identifier nobody has, is 404 `Profile
 * not found`.
 */

export interface ErasureStore {
  request(input: { orgId: string; target: ErasureTarget; actor: string; reason: string | null }): Promise<ErasureRequestResult>;
  /** The erasure `id` names: its own id, or its profile's (findErasure). */
  get(orgId: string, id: string): Promise<ErasureView | undefined>;
}

export interface ErasureRoutesDeps extends AdmissionDeps {
  erasures: ErasureStore;
  /** Called after a request is recorded: publishes it now (and retries later on its own). */
  published: () => void;
  logger: Logger;
  /** How the organisation reads a phone without its country (its identity rules, else PHONE_DEFAULT_COUNTRY_CODE): a phone is checked as the resolver normalised the stored ones. */
  phoneDefaultOf?: (orgId: string) => Promise<PhoneDefault>;
}

export const ERASE_BUCKET = { endpoint: 'profiles-erase', limit: Limits.rate.profilesErasePerOrgIp } as const;
const BODY = { limitBytes: Limits.smallBodyBytes, hint: BodyLimitHints.generic };
const MAX_REASON = 1_000;

/** Mounts the erasure routes on the Profiles API's router: before `/:id`, which would take `erase` for an id. */
export function mountErasureRoutes(r: Router, deps: ErasureRoutesDeps): void {
  const admin = async (req: Parameters<typeof admit>[0]) => (await admit(req, deps, KeyRequirements.admin, ERASE_BUCKET)).key;

  const record = async (orgId: string, keyId: string, target: ErasureTarget, reason: string | null): Promise<ErasureView> => {
    const actor = `admin-key:${keyId}`;
    const result = await deps.erasures.request({ orgId, target, actor, reason });
    if (result.outcome === 'not_found') throw new HttpError(404, Messages.profileNotFound);
    if (result.outcome === 'exists') throw new HttpError(409, Messages.erasureAlreadyRequested, { body: { erasure_id: result.erasureId } });
    deps.published();
    deps.logger.info({ orgId, actor, erasureId: result.erasure.id, kind: target.kind }, 'erasure requested');
    return result.erasure;
  };

  r.post('/erase', async (req, res) => {
    const key = await admin(req);
    const raw = await readJsonBody(req, BODY);
    const phone = (raw as { phone?: unknown } | null)?.phone;
    const body = checkIdentifierBody(raw, phone != null && deps.phoneDefaultOf ? await deps.phoneDefaultOf(key.orgId) : undefined);
    sendJson(res, 202, { success: true, erasure: await record(key.orgId, key.keyId, body.target, body.reason) });
  });

  r.get('/:id/erase', async (req, res) => {
    const key = await admin(req);
    const erasure = await deps.erasures.get(key.orgId, String(req.params.id ?? ''));
    if (!erasure) throw new HttpError(404, Messages.erasureNotFound);
    sendJson(res, 200, { success: true, erasure });
  });

  r.post('/:id/erase', async (req, res) => {
    const key = await admin(req);
    const reason = checkReason(asObject(await readJsonBody(req, BODY)));
    const id = String(req.params.id ?? '');
    // No profile id is longer than 200 characters or holds U+0000.
    if (id.length === 0 || id.length > 200 || id.includes('\u0000')) throw new HttpError(404, Messages.profileNotFound);
    sendJson(res, 202, { success: true, erasure: await record(key.orgId, key.keyId, { kind: 'profile', id }, reason) });
  });
}

function asObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, Messages.erasureBodyNotObject);
  return body as Record<string, unknown>;
}

/** `reason`: absent, null, or a string of at most 1000 characters (stored made storable). */
export function checkReason(b: Record<string, unknown>): string | null {
  const reason = b.reason;
  if (reason === undefined || reason === null) return null;
  if (typeof reason !== 'string' || reason.length > MAX_REASON) throw new HttpError(400, Messages.erasureReasonInvalid);
  const stored = toStorable(reason);
  return stored.ok && stored.value !== '' ? stored.value : null;
}

/** The body of POST /v1-profiles/erase: exactly one identifier, and an optional reason. */
export function checkIdentifierBody(body: unknown, phoneDefault?: PhoneDefault): { target: ErasureTarget; reason: string | null } {
  const b = asObject(body);
  const given = ERASABLE_IDENTIFIER_TYPES.filter((t) => b[t] !== undefined && b[t] !== null);
  if (given.length !== 1) throw new HttpError(400, Messages.erasureIdentifierRequired);
  const kind = given[0] as ErasableIdentifierType;
  const value = b[kind];
  if (typeof value !== 'string' || value.length > Limits.identifierMaxLength || normaliseIdentifier(kind, value, phoneDefault) === null) {
    throw new HttpError(400, Messages.erasureIdentifierInvalid(kind));
  }
  return { target: { kind, value }, reason: checkReason(b) };
}
