import type { DeliveryOutcome } from './types';

/** Outcome errors end up in logs and in the connector's status: long enough to diagnose, short enough to store. */
export const MAX_ERROR_LENGTH = 500;

const REDACTED = '[redacted]';

/**
 * Every spelling of a secret that can come back in a platform's answer: as
 * sent, percent-encoded (an echoed URL or form body) and JSON-escaped (an
 * echoed JSON body read as text).
 */
function spellings(secret: string): string[] {
  return [
    secret,
    encodeURIComponent(secret),
    new URLSearchParams({ s: secret }).toString().slice('s='.length),
    JSON.stringify(secret).slice(1, -1),
  ];
}

/**
 * Replaces every known secret in `text`. Platforms do echo credentials (Meta
 * quotes a malformed access token, a proxy may reflect the request), and an
 * outcome's error is logged and stored, so nothing leaves a client unredacted.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  const forms = [...new Set(secrets.filter((s) => s.length > 0).flatMap(spellings))];
  // Longest first, so a secret that contains another is replaced whole.
  forms.sort((a, b) => b.length - a.length);
  return forms.reduce((out, form) => out.replaceAll(form, REDACTED), text);
}

/** Bounded after redaction, so a cut can never leave half a secret behind. */
export function boundedErrorText(text: string): string {
  return text.length <= MAX_ERROR_LENGTH ? text : `${text.slice(0, MAX_ERROR_LENGTH - 1)}…`;
}

/** The one exit every outcome passes through: redacted, then bounded. */
export function safeOutcome(outcome: DeliveryOutcome, secrets: readonly string[]): DeliveryOutcome {
  if (outcome.kind === 'sent') return outcome;
  return { ...outcome, error: boundedErrorText(redactSecrets(outcome.error, secrets)) };
}
