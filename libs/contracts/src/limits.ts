/** The spec's numeric limits (Limits table). */
export const Limits = {
  batchMaxEvents: 100,
  batchBodyBytes: 1_048_576,
  smallBodyBytes: 262_144,
  identifierMaxLength: 200,
  eventNameMaxLength: 200,
  requestIdMaxLength: 200,
  /** Per-minute request rates, fixed one-minute windows. */
  rate: {
    batchPerOrgIp: 100,
    batchPerOrg: 2000,
    profilesReadPerOrgIp: 60,
    profilesMergePerOrgIp: 10,
    consentPerOrgIp: 60,
    /** Additive: the erasure routes' own bucket (POST /v1-profiles/:id/erase, /erase, GET /:id/erase). */
    profilesErasePerOrgIp: 10,
  },
  profileList: { defaultLimit: 50, maxLimit: 100 },
  profileEvents: { defaultLimit: 50, maxLimit: 200 },
  /** GET /v1-profiles/:id/merges (additive within v1). */
  profileMerges: { defaultLimit: 20, maxLimit: 100 },
  /**
   * POST /v1-profiles/:id/unmerge (additive): the most events a profile may
   * hold to be unmerged. An unmerge resolves them all again in one
   * transaction, which holds the profile's identities meanwhile.
   */
  unmergeMaxEvents: 100_000,
  search: { defaultLimit: 20, maxLimit: 50, maxQueryLength: 200 },
  /** Warn-only soft caps on properties and traits. */
  softCaps: { maxKeys: 300, maxValueBytes: 32 * 1024, maxDepth: 8 },
  /**
   * Hard cap (additive, not in the spec): an event nested deeper than this is
   * refused alone (`processing_failed`). JSON encoders and PostgreSQL's jsonb
   * recurse per level; 64 is eight times the soft cap and far past any real event.
   */
  maxNestingDepth: 64,
  /** A timestamp further than this in the future is clamped to the receive time. */
  futureTimestampToleranceMs: 5 * 60 * 1000,
  /** Retry-After on 503 and on the paused-ingestion 429. */
  retryAfterUnavailableSeconds: 30,
  retryAfterPausedSeconds: 86_400,
} as const;
