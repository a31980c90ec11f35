import type { VerifiedKey } from '@svc/accounts';

/** A verified write key of an active organisation, with no allowlists, cap or quota: the test double's key, `overrides` applied. */
export const verifiedKey = (overrides: Partial<VerifiedKey> = {}): VerifiedKey => ({
  keyId: 'key-1',
  orgId: '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f',
  type: 'write',
  ipAllowlist: [],
  originAllowlist: [],
  ratePerMinuteCap: null,
  planState: 'active',
  monthlyEventQuota: null,
  ...overrides,
});
