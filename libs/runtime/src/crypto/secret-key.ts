import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * 32-byte keys from the configuration (connector secrets, the raw log's
 * master key): 64 hex digits or base64 (base64url too). The standalone stack
 * and svcctl on its DATA_DIR may leave one unset: then it is generated once
 * and kept in a file there, readable by its owner only, so every process on
 * that DATA_DIR agrees.
 */

export class SecretKeyError extends Error {}

/** The key from its configured text; `name` is the setting, for the error. */
export function parseSecretKey(text: string, name: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (key.length !== 32) throw new SecretKeyError(`${name} must be 32 bytes, as 64 hex digits or base64`);
  return key;
}

export function generateSecretKey(): string {
  return randomBytes(32).toString('base64');
}

/** The key kept in `DATA_DIR/<file>`, made there (mode 0600) by whichever process comes first. */
export async function secretKeyFromDataDir(dataDir: string, file: string, name: string): Promise<Buffer> {
  const at = path.join(dataDir, file);
  await mkdir(dataDir, { recursive: true });
  try {
    await writeFile(at, `${generateSecretKey()}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return parseSecretKey(await readFile(at, 'utf8'), name);
}
