/** The spec's profile list sort fields (GET /v1-profiles `sort_by`); each has a read index on identity.profiles. */
export const PROFILE_SORT_FIELDS = ['last_seen_at', 'first_seen_at', 'event_count', 'session_count', 'engagement_score', 'created_at'] as const;
export type ProfileSortField = (typeof PROFILE_SORT_FIELDS)[number];
