import { grantsFingerprinting } from '@svc/contracts';

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
