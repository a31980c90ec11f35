import { Type, type Static } from '@sinclair/typebox';
import { isValidIdentifier } from './identifiers';
import { Limits } from './limits';
import { toStorable } from './storable';
import { canonicalTimestamp } from './timestamps';

/** The purposes a consent decision can name. */
export const CONSENT_PURPOSES = ['analytics', 'fingerprinting', 'identity'] as const;
export type ConsentPurpose = (typeof CONSENT_PURPOSES)[number];

const Identifier = Type.String({ minLength: 1, maxLength: Limits.identifierMaxLength });

/**
 * Body of POST /v1-consent: one decision by one subject about one or more
 * purposes. The browser library sends exactly this.
 */
export const ConsentDecisionSchema = Type.Object(
  {
    /** The visitor's anonymous id (`anon_<uuid>` from the browser library). */
    anonymousId: Identifier,
    /** The known user id, when the visitor is identified. */
    userId: Type.Optional(Type.Union([Identifier, Type.Null()])),
    /** Purpose → granted (true) or denied (false); at least one. */
    purposes: Type.Partial(
      Type.Object(Object.fromEntries(CONSENT_PURPOSES.map((p) => [p, Type.Boolean()])) as Record<ConsentPurpose, ReturnType<typeof Type.Boolean>>, {
        additionalProperties: false,
        minProperties: 1,
      }),
    ),
    /** Where the decision was made, e.g. `banner`, `preferences`, `api`. */
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    /** When the visitor decided, on the client's clock (ISO 8601). */
    timestamp: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { $id: 'ConsentDecision', additionalProperties: true },
);
export type ConsentDecision = Static<typeof ConsentDecisionSchema>;

export const ConsentMessages = {
  subjectRequired: 'anonymous_id or user_id is required',
  subjectHasNul: 'anonymous_id and user_id must not contain U+0000',
  invalidLimit: 'limit must be an integer from 1 to 200',
  invalidCursor: 'Invalid cursor',
} as const;

export type ConsentCheck = { ok: true; decision: ConsentDecision } | { ok: false; message: string };

const invalid = (why: string): ConsentCheck => ({ ok: false, message: `Invalid consent: ${why}` });

/** Validates a POST /v1-consent body, naming the first problem in words a client can act on. */
export function checkConsentDecision(body: unknown): ConsentCheck {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return invalid('the body must be a JSON object');
  // Strings as the records table and the topic can hold them (no U+0000, no lone surrogates).
  const storable = toStorable(body);
  if (!storable.ok) return invalid('the body is nested too deeply');
  const b = storable.value as Record<string, unknown>;
  if (b.anonymousId === undefined || b.anonymousId === null || b.anonymousId === '') return invalid('anonymousId is required');
  if (!isValidIdentifier(b.anonymousId)) return invalid('anonymousId must be a real visitor id of at most 200 characters');
  if (b.userId != null && !isValidIdentifier(b.userId)) return invalid('userId must be a real user id of at most 200 characters');
  const purposes = b.purposes;
  if (typeof purposes !== 'object' || purposes === null || Array.isArray(purposes) || Object.keys(purposes).length === 0) {
    return invalid(`purposes must map at least one of ${CONSENT_PURPOSES.join(', ')} to true or false`);
  }
  for (const [name, granted] of Object.entries(purposes)) {
    if (!(CONSENT_PURPOSES as readonly string[]).includes(name)) {
      return invalid(`unknown purpose "${name.slice(0, 64)}" (known: ${CONSENT_PURPOSES.join(', ')})`);
    }
    if (typeof granted !== 'boolean') return invalid(`purposes.${name} must be true or false`);
  }
  if (b.source !== undefined && (typeof b.source !== 'string' || b.source.length < 1 || b.source.length > 64)) {
    return invalid('source must be a string of 1 to 64 characters');
  }
  const timestamp = b.timestamp === undefined ? undefined : canonicalTimestamp(b.timestamp);
  if (b.timestamp !== undefined && timestamp === undefined) return invalid('timestamp must be an ISO 8601 date-time');
  return {
    ok: true,
    decision: {
      anonymousId: b.anonymousId,
      userId: (b.userId as string | null | undefined) ?? null,
      purposes: purposes as ConsentDecision['purposes'],
      ...(b.source === undefined ? {} : { source: b.source as string }),
      ...(timestamp === undefined ? {} : { timestamp }),
    },
  };
}

/**
 * The spec's fingerprint consent rule: `context.fingerprint` is kept only when
 * the same context grants it with `consent: true`, `consent.fingerprinting:
 * true` or `consent.identity: true`. The gateway applies it before the log;
 * the resolver again, for any other producer.
 */
export function grantsFingerprinting(consent: unknown): boolean {
  if (consent === true) return true;
  if (typeof consent !== 'object' || consent === null) return false;
  const purposes = consent as Record<string, unknown>;
  return purposes.fingerprinting === true || purposes.identity === true;
}
