import http from 'node:http';
import https from 'node:https';

/**
 * The `healthcheck` command, for a compose healthcheck (the image carries no
 * curl): exits 0 when this container's service answers /readyz with 200.
 * It reads PORT and TLS_CERT_FILE itself rather than through @svc/runtime's
 * config, which would load the whole runtime on every probe.
 */
export async function healthcheckCommand(environment: Record<string, string | undefined>): Promise<number> {
  const port = Number(environment.PORT || 8080);
  return (await readyzAnswers200(port, Boolean(environment.TLS_CERT_FILE))) ? 0 : 1;
}

/**
 * True only on a 200 from /readyz within `timeoutMs`. Over TLS when the
 * service serves TLS itself; the certificate is not checked, since the peer
 * is our own loopback.
 */
export function readyzAnswers200(port: number, tls: boolean, timeoutMs = 4_000): Promise<boolean> {
  return new Promise((resolve) => {
    const get = tls ? https.get : http.get;
    const req = get({ host: '127.0.0.1', port, path: '/readyz', timeout: timeoutMs, rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', () => resolve(false));
  });
}
