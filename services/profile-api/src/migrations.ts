import type { MigrationSet } from '@svc/runtime';

/**
 * Indexes the Profiles API's queries need on the resolver's `identity`
 * tables. Run after `identityMigrations`. Every statement is
 * `if not exists` with a fixed name, so these can move into the resolver's
 * own migrations (the intended home; identity.* is the resolver's schema)
 * and this set then becomes a no-op. The `profile_api` schema itself holds
 * nothing but this set's migration log.
 *
 * - profiles: one partial index per list sort field over live profiles,
 *   `(org_id, <field>, id)`, read forwards for asc and backwards for desc,
 *   ties broken by id in the same direction; the count uses it too.
 * - events: (org_id, profile_id, event_name, event_timestamp desc, id desc)
 *   for the `event_name` filter, keyset-paged like the resolver's own
 *   (org_id, profile_id, event_timestamp desc, id desc).
 * - search: pg_trgm GIN indexes for partial (substring, ILIKE) matching on
 *   identity_signals.signal_value and canonical_ids.canonical_id (written
 *   once per profile; 0002 moved it off identity.profiles, where every update
 *   of a profile added entries to it). Exact search uses the primary key of
 *   identity_signals and the (org_id, canonical_id) key of profiles.
 */
const SORT_FIELDS = ['last_seen_at', 'first_seen_at', 'event_count', 'session_count', 'engagement_score', 'created_at'];

export const profileApiMigrations: MigrationSet = {
  schema: 'profile_api',
  migrations: [
    {
      name: '0001_identity_read_indexes',
      async up(db) {
        const sorts = SORT_FIELDS.map(
          (f) => `create index if not exists profiles_live_by_${f}_idx on identity.profiles (org_id, ${f}, id) where merged_into is null;`,
        ).join('\n');
        await db.raw(`
          ${sorts}
          create index if not exists events_profile_name_time_idx
            on identity.events (org_id, profile_id, event_name, event_timestamp desc, id desc);
          create extension if not exists pg_trgm;
          create index if not exists identity_signals_value_trgm_idx
            on identity.identity_signals using gin (signal_value gin_trgm_ops);
          create index if not exists profiles_canonical_id_trgm_idx
            on identity.profiles using gin (canonical_id gin_trgm_ops);
        `);
      },
    },
    {
      name: '0002_canonical_id_search_off_profiles',
      async up(db) {
        await db.raw(`
          drop index if exists identity.profiles_canonical_id_trgm_idx;
          create index if not exists canonical_ids_value_trgm_idx
            on identity.canonical_ids using gin (canonical_id gin_trgm_ops);
        `);
      },
    },
  ],
};
