import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { SealedBlobError, openBytes, pooledRandomBytes, sealBytes } from './aead';

describe('AES-256-GCM blobs', () => {
  const key = randomBytes(32);

  it('opens what it sealed, with the same associated data only', () => {
    const sealed = sealBytes(key, 'org-1', 'the secret');
    expect(sealed[0]).toBe(1);
    expect(openBytes(key, 'org-1', sealed).toString()).toBe('the secret');
    expect(() => openBytes(key, 'org-2', sealed)).toThrow(SealedBlobError);
    expect(() => openBytes(randomBytes(32), 'org-1', sealed)).toThrow(SealedBlobError);
    expect(() => openBytes(key, 'org-1', sealed.subarray(0, 20))).toThrow(SealedBlobError);
  });

  it('never repeats an IV, across many pool refills', () => {
    const ivs = new Set<string>();
    for (let i = 0; i < 20_000; i++) ivs.add(sealBytes(key, 'a', '').subarray(1, 13).toString('hex'));
    expect(ivs.size).toBe(20_000);
  });

  it('hands out random bytes, of any size', () => {
    const a = pooledRandomBytes(32);
    const b = pooledRandomBytes(32);
    expect(a).toHaveLength(32);
    expect(a.equals(b)).toBe(false);
    expect(pooledRandomBytes(100_000)).toHaveLength(100_000);
  });
});
