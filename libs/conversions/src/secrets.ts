import { SealedBlobError, SecretKeyError, env, openBytes, parseSecretKey as parseKey, sealBytes, secretKeyFromDataDir } from '@svc/runtime';

/**
 * Connector secrets at rest: AES-256-GCM (runtime's sealBytes) under a key
 * from the configuration (CONNECTOR_SECRET_KEY). The connector's id is the
 * associated data, so a sealed blob copied onto another connector's row
 * does not open.
 */

const KEY_NAME = 'CONNECTOR_SECRET_KEY';
const KEY_DESCRIPTION = 'Key that seals connector secrets at rest (32 bytes: 64 hex digits or base64)';

/** Where the standalone stack and svcctl get the key: unset, the one kept in DATA_DIR (resolveSecretKey). */
export const connectorKeyConfigSpec = {
  CONNECTOR_SECRET_KEY: env.optionalString({
    description: `${KEY_DESCRIPTION}; unset: a key generated once and kept in DATA_DIR`,
    secret: true,
  }),
};

/** The same for the forwarder on its own: it has no DATA_DIR to keep a key in, so the key must be given. */
export const requiredConnectorKeyConfigSpec = {
  CONNECTOR_SECRET_KEY: env.string({ description: KEY_DESCRIPTION, secret: true }),
};

export { SecretKeyError };

/** The 32-byte key from its configured text: 64 hex digits or base64 (base64url too). */
export const parseSecretKey = (text: string): Buffer => parseKey(text, KEY_NAME);

export function seal(key: Buffer, associated: string, secrets: Record<string, string>): Buffer {
  return sealBytes(key, associated, JSON.stringify(secrets));
}

/** Throws SecretKeyError when the blob was sealed under another key or for another connector. */
export function open(key: Buffer, associated: string, sealed: Buffer): Record<string, string> {
  try {
    return JSON.parse(openBytes(key, associated, sealed).toString('utf8')) as Record<string, string>;
  } catch (err) {
    if (err instanceof SealedBlobError) throw new SecretKeyError(`connector secrets do not open with ${KEY_NAME} (wrong key, or tampered)`);
    throw err;
  }
}

/**
 * The key for a deployment that sets no CONNECTOR_SECRET_KEY (the standalone
 * stack and svcctl on its DATA_DIR): read from DATA_DIR, or made there once.
 * Both sides call this, so they agree.
 */
export const keyFromDataDir = (dataDir: string): Promise<Buffer> => secretKeyFromDataDir(dataDir, 'connector-secret.key', KEY_NAME);

/** The configured key, or (unset) the one kept in DATA_DIR. */
export function resolveSecretKey(configured: string | undefined, dataDir: string): Promise<Buffer> {
  return configured ? Promise.resolve(parseSecretKey(configured)) : keyFromDataDir(dataDir);
}
