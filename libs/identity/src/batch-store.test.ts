import { describe, expect, it } from '@jest/globals';
import { survivorsToLoad, type ProfileRow } from './batch-store';

const ORG = '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f';
const P1 = '00000000-0000-8000-8000-000000000001';
const P2 = '00000000-0000-8000-8000-000000000002';
const P3 = '00000000-0000-8000-8000-000000000003';
const stored = (id: string, mergedInto: string | null = null): ProfileRow => ({ id, org_id: ORG, canonical_id: id, user_id: null, merged_into: mergedInto });

describe('survivorsToLoad', () => {
  it('names the survivors of loaded profiles that are not loaded yet, once each', () => {
    const loaded = new Map([P1, P2].map((id) => [id, stored(id, id === P1 ? P3 : null)]));
    expect(survivorsToLoad(loaded, [...loaded.values(), stored(P2, P3)])).toEqual([P3]);
    loaded.set(P3, stored(P3));
    expect(survivorsToLoad(loaded, loaded.values())).toEqual([]);
  });
});
