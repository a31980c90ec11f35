import { Router, type Request } from 'express';
import { BodyLimitHints, Limits, Messages, toStorable } from '@svc/contracts';
import {
  HttpError,
  NotFoundError,
  ValidationError,
  notFound,
  readJsonBody,
  rejectOversizedContentLength,
  sendJson,
  type Logger,
} from '@svc/runtime';
import { KeyRequirements, admit, type AdmissionDeps } from '@svc/accounts';
import type { CursorCodec } from './cursor';
import { mountErasureRoutes, type ErasureRoutesDeps } from './erasure-routes';
import { ProfileLimits, ProfileMessages } from './messages';
import { parseEventsParams, parseListParams, parseMergesParams, parseSearchParams } from './params';
import type { MergeResult, ProfileStore } from './store';

export interface ProfileRoutesDeps extends AdmissionDeps {
  store: ProfileStore;
  cursors: CursorCodec;
  logger: Logger;
  /** The erasure routes (erasure-routes.ts); absent: not mounted. */
  erasures?: Pick<ErasureRoutesDeps, 'erasures' | 'published' | 'phoneDefaultOf'>;
}

const BODY_LIMIT = Limits.smallBodyBytes;
const HINT = BodyLimitHints.generic;

/** Rate-limit buckets: every GET route shares one; merge and unmerge share their own. */
export const RateBuckets = {
  read: { endpoint: 'profiles', limit: Limits.rate.profilesReadPerOrgIp },
  merge: { endpoint: 'profiles-merge', limit: Limits.rate.profilesMergePerOrgIp },
} as const;

/**
 * The Profiles API under `/v1-profiles` (mounted as a router of its own, so
 * its 404s and error mapping stay inside it):
 *
 *   GET  /                  list (read or admin key)
 *   GET  /search            search
 *   GET  /:id               detail          :id = profile UUID or canonical_id;
 *   GET  /:id/events        events            a merged-away id stands for its survivor
 *   GET  /:id/identities    identities
 *   GET  /:id/merges        the merge journal (additive within v1)
 *   POST /merge             admin merge (admin key)
 *   POST /:id/unmerge       undo a merge of :id's journal (admin key; additive): 202, the resolver carries it out
 *   GET  /:id/unmerge       that request (:id = the unmerge's id): pending → done | failed
 *   POST /:id/erase, POST /erase, GET /:id/erase   erasure (admin key; erasure-routes.ts)
 *   anything else           404 `Not found`
 *
 * Every route: Content-Length over 256 KiB → 413 first; then authentication;
 * then the (org, IP) rate limit (60/min shared by the GET routes, 10/min for
 * merge, each tightened by the key's own cap); then parameters; then the work.
 * A profile of another organisation is indistinguishable from none: 404.
 */
export function mountProfiles(router: Router, deps: ProfileRoutesDeps): void {
  const r = Router();

  const read = async (req: Request) => (await admit(req, deps, KeyRequirements.read, RateBuckets.read)).key;

  /** The read of the live profile `:id` stands for, or 404 `Profile not found`. */
  const found = <T>(value: T | undefined): T => {
    if (value === undefined) throw new HttpError(404, Messages.profileNotFound);
    return value;
  };
  const idOf = (req: Request) => String(req.params.id ?? '');
  /** A cursor belongs to the stream (or journal) it was issued on; after a merge, that is the survivor's: else 400 `Invalid cursor`. */
  const checkCursorProfile = async (orgId: string, after: { profileId: string } | undefined, profileId: string): Promise<void> => {
    if (after && after.profileId !== profileId && (await deps.store.resolve(orgId, after.profileId)) !== profileId) throw new HttpError(400, Messages.invalidCursor);
  };

  r.use(rejectOversizedContentLength(BODY_LIMIT, HINT));
  // Before `/:id`, which would take `erase` for a profile id.
  if (deps.erasures) mountErasureRoutes(r, { ...deps, ...deps.erasures });

  r.get('/', async (req, res) => {
    const key = await read(req);
    const params = parseListParams(req.query);
    const { profiles, total } = await deps.store.list(key.orgId, params);
    sendJson(res, 200, { success: true, profiles, total, limit: params.limit, offset: params.offset });
  });

  r.get('/search', async (req, res) => {
    const key = await read(req);
    const params = parseSearchParams(req.query);
    const profiles = await deps.store.search(key.orgId, params);
    sendJson(res, 200, { success: true, profiles, count: profiles.length });
  });

  r.post('/merge', async (req, res) => {
    const { key } = await admit(req, deps, KeyRequirements.admin, RateBuckets.merge);
    const body = checkMergeBody(await readJsonBody(req, { limitBytes: BODY_LIMIT, hint: HINT }));
    if (body.source === body.target) throw new HttpError(400, ProfileMessages.mergeIntoItself);
    const actor = `admin-key:${key.keyId}`;
    let merged: MergeResult;
    try {
      merged = await deps.store.merge({ orgId: key.orgId, source: body.source, target: body.target, actor, note: body.reason });
    } catch (err) {
      if (err instanceof NotFoundError) throw new HttpError(404, Messages.mergeProfilesNotFound);
      // Both ids stand for one live profile (one was merged into the other before).
      if (err instanceof ValidationError) throw new HttpError(400, ProfileMessages.mergeIntoItself);
      throw err;
    }
    deps.logger.info({ orgId: key.orgId, actor, sourceId: merged.sourceId, targetId: merged.targetId }, 'profiles merged by an admin');
    sendJson(res, 200, {
      success: true,
      merged: {
        source_profile_id: merged.sourceId,
        target_profile_id: merged.targetId,
        reason: body.reason,
        merged_at: merged.mergedAt,
      },
    });
  });

  r.post('/:id/unmerge', async (req, res) => {
    const { key } = await admit(req, deps, KeyRequirements.admin, RateBuckets.merge);
    const mergeId = checkUnmergeBody(await readJsonBody(req, { limitBytes: BODY_LIMIT, hint: HINT }));
    const actor = `admin-key:${key.keyId}`;
    const result = await deps.store.unmerge({ orgId: key.orgId, profileRef: idOf(req), mergeId, actor });
    switch (result.outcome) {
      case 'profile_not_found':
        throw new HttpError(404, Messages.profileNotFound);
      case 'merge_not_found':
        throw new HttpError(404, Messages.mergeNotFound);
      case 'undone':
        throw new HttpError(409, Messages.mergeAlreadyUndone, { body: { undone_by: result.undoneBy } });
      case 'too_large':
        throw new HttpError(409, Messages.unmergeTooLarge);
      case 'needs_replay':
        throw new HttpError(409, Messages.unmergeNeedsReplay);
    }
    if (result.outcome === 'recorded') deps.logger.info({ orgId: key.orgId, actor, unmergeId: result.unmerge.id, mergeId }, 'unmerge requested');
    // The same request again answers the same unmerge: 202 while it is pending, 200 once it is settled.
    sendJson(res, result.unmerge.status === 'pending' ? 202 : 200, { success: true, unmerge: result.unmerge });
  });

  r.get('/:id/unmerge', async (req, res) => {
    const { key } = await admit(req, deps, KeyRequirements.admin, RateBuckets.read);
    const unmerge = await deps.store.findUnmerge(key.orgId, idOf(req));
    if (!unmerge) throw new HttpError(404, Messages.unmergeNotFound);
    sendJson(res, 200, { success: true, unmerge });
  });

  // `merge`, `search` and `erase` are not profile ids: any other method on them is an unmatched route.
  r.all(['/merge', '/search', '/erase'], notFound());

  r.get('/:id', async (req, res) => {
    const key = await read(req);
    const profile = found(await deps.store.detail(key.orgId, idOf(req)));
    sendJson(res, 200, { success: true, profile });
  });

  r.get('/:id/events', async (req, res) => {
    const key = await read(req);
    const params = parseEventsParams(req.query);
    const after = params.cursor === undefined ? undefined : deps.cursors.decode(params.cursor, key.orgId, params.eventName);
    const onCursorPath = after !== undefined;
    const page = found(
      await deps.store.events(key.orgId, idOf(req), {
        limit: params.limit,
        eventName: params.eventName,
        after,
        offset: params.offset,
        exactTotal: !onCursorPath || params.preciseTotal,
      }),
    );
    await checkCursorProfile(key.orgId, after, page.profileId);
    sendJson(res, 200, {
      success: true,
      events: page.events,
      total: page.total,
      limit: params.limit,
      ...(onCursorPath ? {} : { offset: params.offset }),
      total_is_estimate: onCursorPath && !params.preciseTotal,
      has_more: page.next !== undefined,
      next_cursor: page.next ? deps.cursors.encode(key.orgId, params.eventName, page.next) : null,
    });
  });

  r.get('/:id/identities', async (req, res) => {
    const key = await read(req);
    const identities = found(await deps.store.identities(key.orgId, idOf(req)));
    sendJson(res, 200, { success: true, identities });
  });

  r.get('/:id/merges', async (req, res) => {
    const key = await read(req);
    const params = parseMergesParams(req.query);
    const after = params.cursor === undefined ? undefined : deps.cursors.decodeMerges(params.cursor, key.orgId);
    const page = found(await deps.store.merges(key.orgId, idOf(req), { limit: params.limit, before: after?.id }));
    await checkCursorProfile(key.orgId, after, page.profileId);
    sendJson(res, 200, {
      success: true,
      merges: page.entries,
      limit: params.limit,
      has_more: page.next !== undefined,
      next_cursor: page.next === undefined ? null : deps.cursors.encodeMerges(key.orgId, { profileId: page.profileId, id: page.next }),
    });
  });

  r.use(notFound());
  router.use('/v1-profiles', r);
}

export interface MergeBody {
  source: string;
  target: string;
  reason: string | null;
}

/** The journal entry a POST /v1-profiles/:id/unmerge body names: `merge_id`, as the journal gives it (a string of digits; a whole number will do). */
export function checkUnmergeBody(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, Messages.unmergeBodyNotObject);
  const id = (body as Record<string, unknown>).merge_id;
  if (id === undefined || id === null) throw new HttpError(400, Messages.unmergeMergeIdRequired);
  const text = typeof id === 'number' && Number.isSafeInteger(id) && id > 0 ? String(id) : id;
  if (typeof text !== 'string' || !/^[1-9][0-9]{0,17}$/.test(text)) throw new HttpError(400, Messages.unmergeMergeIdInvalid);
  return text;
}

/** Validates a POST /v1-profiles/merge body, naming the first problem. */
export function checkMergeBody(body: unknown): MergeBody {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(400, ProfileMessages.mergeBodyNotObject);
  }
  const b = body as Record<string, unknown>;
  const id = (field: 'source_profile_id' | 'target_profile_id'): string => {
    const value = b[field];
    if (value === undefined || value === null) throw new HttpError(400, ProfileMessages.mergeFieldRequired(field));
    if (typeof value !== 'string' || value.length === 0 || value.length > ProfileLimits.maxIdLength) {
      throw new HttpError(400, ProfileMessages.mergeFieldInvalid(field));
    }
    return value;
  };
  const source = id('source_profile_id');
  const target = id('target_profile_id');
  const reason = b.reason;
  if (reason !== undefined && reason !== null && (typeof reason !== 'string' || reason.length > ProfileLimits.maxReasonLength)) {
    throw new HttpError(400, ProfileMessages.mergeReasonInvalid);
  }
  // The reason is stored as text: without U+0000 or lone surrogates, which PostgreSQL refuses.
  const stored = typeof reason === 'string' ? toStorable(reason) : undefined;
  return { source, target, reason: stored?.ok && stored.value !== '' ? stored.value : null };
}
