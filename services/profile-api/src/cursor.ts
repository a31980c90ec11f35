import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Messages } from '@svc/contracts';
import { HttpError } from '@svc/runtime';

/**
 * The opaque keyset cursors of GET /v1-profiles/:id/events (and, in the
 * same format, of GET /v1-profiles/:id/merges: see encodeMerges).
 *
 * A position in one profile's event stream, newest first: the last event
 * returned, as (event_timestamp in microseconds since the epoch, event id).
 * The next page is everything strictly before it in (event_timestamp desc,
 * id desc) order, so events that arrive meanwhile (newer ones above the
 * position, late ones below it) never shift a page: every event that exists
 * below the position is visited exactly once.
 *
 * Format: base64url(JSON payload) "." base64url(HMAC-SHA256 tag, 128 bits).
 * The tag covers the payload, which names the organisation and the
 * event_name filter it was issued for, so a cursor that was altered, made up,
 * or carried to another organisation or filter is refused with 400
 * `Invalid cursor` before any query runs. The key is CURSOR_SECRET; without
 * it a random per-process key is used (cursors then stop working across a
 * restart or between replicas: set it whenever more than one process serves
 * the API).
 */
export interface EventCursor {
  /** The live profile whose stream it was issued on. */
  profileId: string;
  /** event_timestamp of the last event returned, microseconds since 1970 (a decimal string; exceeds 2^53). */
  micros: string;
  /** id of the last event returned. */
  id: string;
}

interface Payload {
  v: 1;
  /** organisation */
  o: string;
  /** profile */
  p: string;
  /** event_name filter, or null */
  n: string | null;
  /** event_timestamp, microseconds */
  t: string;
  /** event id */
  i: string;
}

/** A position in a profile's merge journal: the last entry returned. */
export interface MergesCursor {
  /** The live profile whose journal it was issued on. */
  profileId: string;
  /** The id of the last entry returned (decimal digits). */
  id: string;
}

interface MergesPayload {
  v: 1;
  /** kind: an events cursor has none */
  k: 'merges';
  o: string;
  p: string;
  i: string;
}

const invalidCursor = () => new HttpError(400, Messages.invalidCursor);
const ENTRY_ID = /^[1-9]\d{0,18}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MICROS = /^-?\d{1,17}$/;
const TAG_BYTES = 16;
/** Far above any real cursor (about 250 characters with a 200-character filter); refuses junk before hashing it. */
const MAX_CURSOR_LENGTH = 1_024;
const DOMAIN = 'svc/profile-api/events-cursor/v1\u0000';

/** At least this long when configured; a short secret is a guessable key. */
export const MIN_CURSOR_SECRET_LENGTH = 32;

export class CursorCodec {
  private readonly key: Buffer;
  /** True when no secret was configured and the key was drawn at random for this process. */
  readonly ephemeral: boolean;

  constructor(secret?: string) {
    if (secret !== undefined && secret.length < MIN_CURSOR_SECRET_LENGTH) {
      throw new Error(`CURSOR_SECRET must be at least ${MIN_CURSOR_SECRET_LENGTH} characters`);
    }
    this.ephemeral = secret === undefined;
    this.key = secret === undefined ? randomBytes(32) : Buffer.from(secret, 'utf8');
  }

  encode(orgId: string, eventName: string | undefined, c: EventCursor): string {
    const payload: Payload = { v: 1, o: orgId, p: c.profileId, n: eventName ?? null, t: c.micros, i: c.id };
    return this.seal(payload);
  }

  /**
   * The position a cursor stands for, when it is one this service issued for
   * this organisation and this event_name filter; else 400 `Invalid cursor`.
   */
  decode(raw: string, orgId: string, eventName: string | undefined): EventCursor {
    const payload = this.open(raw) as Partial<Payload>;
    // Authentic, so well-formed unless the format changed; checked all the same.
    if (
      payload.v !== 1 ||
      payload.o !== orgId ||
      payload.n !== (eventName ?? null) ||
      typeof payload.p !== 'string' ||
      !UUID.test(payload.p) ||
      typeof payload.t !== 'string' ||
      !MICROS.test(payload.t) ||
      typeof payload.i !== 'string' ||
      !UUID.test(payload.i)
    ) {
      throw invalidCursor();
    }
    return { profileId: payload.p, micros: payload.t, id: payload.i };
  }

  /** The cursor of GET /v1-profiles/:id/merges: the journal of `profileId`, older than entry `id`. */
  encodeMerges(orgId: string, c: MergesCursor): string {
    const payload: MergesPayload = { v: 1, k: 'merges', o: orgId, p: c.profileId, i: c.id };
    return this.seal(payload);
  }

  /** The position a merges cursor stands for, when this service issued it for this organisation; else 400 `Invalid cursor`. */
  decodeMerges(raw: string, orgId: string): MergesCursor {
    const payload = this.open(raw) as Partial<MergesPayload>;
    if (payload.v !== 1 || payload.k !== 'merges' || payload.o !== orgId || typeof payload.p !== 'string' || !UUID.test(payload.p) || typeof payload.i !== 'string' || !ENTRY_ID.test(payload.i)) {
      throw invalidCursor();
    }
    return { profileId: payload.p, id: payload.i };
  }

  private seal(payload: object): string {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${this.tag(body).toString('base64url')}`;
  }

  /** The payload of a cursor this service issued (any kind); 400 `Invalid cursor` for anything else. */
  private open(raw: string): object {
    if (raw.length > MAX_CURSOR_LENGTH) throw invalidCursor();
    const [body, tag, extra] = raw.split('.');
    if (body === undefined || tag === undefined || extra !== undefined || !body || !tag) throw invalidCursor();
    const given = Buffer.from(tag, 'base64url');
    // Canonical base64url only, so one cursor has exactly one spelling.
    if (given.length !== TAG_BYTES || given.toString('base64url') !== tag) throw invalidCursor();
    if (!timingSafeEqual(given, this.tag(body))) throw invalidCursor();
    let payload: unknown;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      throw invalidCursor();
    }
    if (typeof payload !== 'object' || payload === null) throw invalidCursor();
    return payload;
  }

  private tag(body: string): Buffer {
    return createHmac('sha256', this.key).update(DOMAIN).update(body).digest().subarray(0, TAG_BYTES);
  }
}
