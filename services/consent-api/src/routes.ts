import type { Request, Router } from 'express';
import { BodyLimitHints, ConsentMessages, Limits, checkConsentDecision } from '@svc/contracts';
import {
  HttpError,
  methodNotAllowed,
  readJsonBody,
  rejectOversizedContentLength,
  sendJson,
  type RepeatingDrain,
} from '@svc/runtime';
import { KeyRequirements, admit, type AdmissionDeps } from '@svc/accounts';
import type { ConsentStore, HistoryCursor, StoredRecord, Subject } from './store';

export interface ConsentDeps extends AdmissionDeps {
  store: ConsentStore;
  /** Publishes what is recorded (coalescing calls, never throwing). */
  publisher: Pick<RepeatingDrain, 'run'>;
}

const LIMIT = Limits.smallBodyBytes;
const HISTORY = { defaultLimit: 50, maxLimit: 200 };

/**
 * POST /v1-consent records a decision (write or admin key); GET reads the
 * current decision per purpose and the history (read or admin key). Consent is
 * recorded, not enforced at ingestion: see docs/architecture.md.
 */
export function mountConsent(router: Router, deps: ConsentDeps): void {
  /** Both methods share one 60 per minute per (org, IP) bucket. */
  const BUCKET = { endpoint: 'consent', limit: Limits.rate.consentPerOrgIp };

  router.post('/v1-consent', rejectOversizedContentLength(LIMIT, BodyLimitHints.generic), async (req, res) => {
    const { key, ip } = await admit(req, deps, KeyRequirements.write, BUCKET);
    const checked = checkConsentDecision(await readJsonBody(req, { limitBytes: LIMIT, hint: BodyLimitHints.generic }));
    if (!checked.ok) throw new HttpError(400, checked.message);
    const record = await deps.store.record({
      orgId: key.orgId,
      keyId: key.keyId,
      decision: checked.decision,
      clientIp: ip,
      userAgent: req.headers['user-agent'] ?? null,
    });
    void deps.publisher.run();
    sendJson(res, 200, { success: true, id: record.id, received_at: record.received_at });
  });

  router.get('/v1-consent', async (req, res) => {
    const { key } = await admit(req, deps, KeyRequirements.read, BUCKET);
    const subject = subjectOf(req);
    const limit = limitOf(req.query.limit);
    const after = cursorOf(req.query.cursor);
    const [current, page] = await Promise.all([
      deps.store.current(key.orgId, subject),
      deps.store.history(key.orgId, subject, limit, after),
    ]);
    const last = page.records.at(-1);
    sendJson(res, 200, {
      success: true,
      anonymous_id: subject.anonymousId ?? null,
      user_id: subject.userId ?? null,
      current,
      history: page.records.map(view),
      limit,
      has_more: page.hasMore,
      next_cursor: page.hasMore && last ? encodeCursor({ receivedMicros: last.received_micros, id: last.id }) : null,
    });
  });

  router.all('/v1-consent', methodNotAllowed(['GET', 'POST']));
}

function subjectOf(req: Request): Subject {
  const one = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
  // Nothing stored holds U+0000 (PostgreSQL text cannot): such a subject can only be a mistake.
  if ([req.query.anonymous_id, req.query.user_id].some((v) => typeof v === 'string' && v.includes('\u0000'))) {
    throw new HttpError(400, ConsentMessages.subjectHasNul);
  }
  const subject: Subject = {};
  const anonymousId = one(req.query.anonymous_id);
  const userId = one(req.query.user_id);
  if (anonymousId) subject.anonymousId = anonymousId;
  if (userId) subject.userId = userId;
  if (!anonymousId && !userId) throw new HttpError(400, ConsentMessages.subjectRequired);
  return subject;
}

function limitOf(raw: unknown): number {
  if (raw === undefined) return HISTORY.defaultLimit;
  const n = Number(raw);
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || n < 1 || n > HISTORY.maxLimit) {
    throw new HttpError(400, ConsentMessages.invalidLimit);
  }
  return n;
}

function encodeCursor(c: HistoryCursor): string {
  return Buffer.from(`${c.receivedMicros}.${c.id}`).toString('base64url');
}

function cursorOf(raw: unknown): HistoryCursor | undefined {
  if (raw === undefined) return undefined;
  const text = typeof raw === 'string' ? Buffer.from(raw, 'base64url').toString() : '';
  const match = /^(\d{1,20})\.([0-9a-f-]{36})$/.exec(text);
  if (!match) throw new HttpError(400, ConsentMessages.invalidCursor);
  return { receivedMicros: match[1]!, id: match[2]! };
}

function view(r: StoredRecord) {
  return {
    id: r.id,
    anonymous_id: r.anonymous_id,
    user_id: r.user_id,
    purposes: r.purposes,
    source: r.source,
    client_timestamp: r.client_timestamp,
    received_at: r.received_at,
  };
}
