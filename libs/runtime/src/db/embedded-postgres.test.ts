import { describe, expect, it } from '@jest/globals';
import { sizedForMachine } from './embedded-postgres';

describe('sizedForMachine', () => {
  const GiB = 2 ** 30;
  it.each([
    [24 * GiB, '6144MB'],
    [4 * GiB, '1024MB'],
    [1 * GiB, '256MB'],
    // Never below PostgreSQL's own default, never above 8 GB.
    [256 * 2 ** 20, '128MB'],
    [128 * GiB, '8192MB'],
  ])('gives a machine of %d bytes %s of shared buffers', (memory, buffers) => {
    expect(sizedForMachine(memory)).toEqual({ shared_buffers: buffers, max_wal_size: '4GB' });
  });
});
