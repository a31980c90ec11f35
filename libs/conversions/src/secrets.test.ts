import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { generateSecretKey } from '@svc/runtime';
import { SecretKeyError, keyFromDataDir, open, parseSecretKey, seal } from './secrets';

describe('connector secrets at rest', () => {
  const key = randomBytes(32);
  const secrets = { access_token: 'EAAB-secret-token', refresh_token: '1//refresh' };

  it('round-trips, and the sealed form contains no secret', () => {
    const sealed = seal(key, 'connector-1', secrets);
    expect(sealed.toString('latin1')).not.toContain('EAAB');
    expect(open(key, 'connector-1', sealed)).toEqual(secrets);
  });

  it('uses a fresh IV each time', () => {
    expect(seal(key, 'c', secrets).equals(seal(key, 'c', secrets))).toBe(false);
  });

  it.each([
    ['another key', () => open(randomBytes(32), 'connector-1', seal(key, 'connector-1', secrets))],
    ['another connector', () => open(key, 'connector-2', seal(key, 'connector-1', secrets))],
    [
      'a flipped byte',
      () => {
        const sealed = seal(key, 'connector-1', secrets);
        sealed[sealed.length - 1]! ^= 1;
        return open(key, 'connector-1', sealed);
      },
    ],
    ['a truncated blob', () => open(key, 'connector-1', Buffer.from([1, 2, 3]))],
  ])('refuses to open with %s', (_what, attempt) => {
    expect(attempt).toThrow(SecretKeyError);
  });

  it.each([
    ['64 hex digits', 'ab'.repeat(32), true],
    ['base64 of 32 bytes', generateSecretKey(), true],
    ['too short', 'abcd', false],
    ['hex of 31 bytes', 'ab'.repeat(31), false],
  ])('parses a key given as %s', (_what, text, ok) => {
    if (ok) expect(parseSecretKey(text)).toHaveLength(32);
    else expect(() => parseSecretKey(text)).toThrow('CONNECTOR_SECRET_KEY must be 32 bytes, as 64 hex digits or base64');
  });

  it('keeps one key per DATA_DIR, readable by its owner only', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-key-'));
    try {
      const first = await keyFromDataDir(dir);
      expect((await keyFromDataDir(dir)).equals(first)).toBe(true);
      expect((await stat(path.join(dir, 'connector-secret.key'))).mode & 0o777).toBe(0o600);
      expect(parseSecretKey(await readFile(path.join(dir, 'connector-secret.key'), 'utf8')).equals(first)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
