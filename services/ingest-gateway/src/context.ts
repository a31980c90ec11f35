/**
 * Context handling before anything is written: the server's view of the
 * client's address replaces whatever the client claimed, and a fingerprint is
 * kept only when the same context grants consent for it.
 */
export function screenContext(context: Record<string, unknown> | undefined, clientIp: string): Record<string, unknown> {
  const screened: Record<string, unknown> = { ...context, ip_address: clientIp };
  if ('fingerprint' in screened && !grantsFingerprinting(screened.consent)) delete screened.fingerprint;
  return screened;
}

/** `consent: true`, or `consent.fingerprinting: true`, or `consent.identity: true`. */
function grantsFingerprinting(consent: unknown): boolean {
  if (consent === true) return true;
  if (typeof consent !== 'object' || consent === null) return false;
  const purposes = consent as Record<string, unknown>;
  return purposes.fingerprinting === true || purposes.identity === true;
}
