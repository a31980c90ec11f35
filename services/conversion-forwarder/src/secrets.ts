import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Connector secrets at rest: AES-256-GCM under a key from the configuration
 * (CONNECTOR_SECRET_KEY). The connector's id is the associated data, so a
 * sealed blob copied onto another connector's row does not open.
 *
 * Layout: version (1 byte) | IV (12) | tag (16) | ciphertext.
 */

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretKeyError extends Error {}

/** The 32-byte key from its configured text: 64 hex digits or base64 (base64url too). */
export function parseSecretKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (key.length !== 32) throw new SecretKeyError('CONNECTOR_SECRET_KEY must be 32 bytes, as 64 hex digits or base64');
  return key;
}

export function generateSecretKey(): string {
  return randomBytes(32).toString('base64');
}

export function seal(key: Buffer, associated: string, secrets: Record<string, string>): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(associated, 'utf8'));
  const body = Buffer.concat([cipher.update(JSON.stringify(secrets), 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
}

/** Throws SecretKeyError when the blob was sealed under another key or for another connector. */
export function open(key: Buffer, associated: string, sealed: Buffer): Record<string, string> {
  if (sealed.length < 1 + IV_BYTES + TAG_BYTES || sealed[0] !== VERSION) throw new SecretKeyError('unreadable sealed secrets');
  const iv = sealed.subarray(1, 1 + IV_BYTES);
  const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(associated, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    const text = Buffer.concat([decipher.update(sealed.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    return JSON.parse(text) as Record<string, string>;
  } catch {
    throw new SecretKeyError('connector secrets do not open with CONNECTOR_SECRET_KEY (wrong key, or tampered)');
  }
}

/**
 * The key for a deployment that sets no CONNECTOR_SECRET_KEY (the standalone
 * stack and svcctl on its DATA_DIR): read from DATA_DIR, or made there once,
 * readable by its owner only. Both sides call this, so they agree.
 */
export async function keyFromDataDir(dataDir: string): Promise<Buffer> {
  const file = path.join(dataDir, 'connector-secret.key');
  await mkdir(dataDir, { recursive: true });
  try {
    await writeFile(file, `${generateSecretKey()}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return parseSecretKey(await readFile(file, 'utf8'));
}

/** The configured key, or (unset) the one kept in DATA_DIR. */
export function resolveSecretKey(configured: string | undefined, dataDir: string): Promise<Buffer> {
  return configured ? Promise.resolve(parseSecretKey(configured)) : keyFromDataDir(dataDir);
}
