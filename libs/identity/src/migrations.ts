import { PROFILE_SORT_FIELDS } from '@svc/contracts';
import { sqlMigration, type MigrationSet } from '@svc/runtime';
import { QUEUE_PHONE_RESTATEMENT_SQL } from './phone-restatement';

/**
 * The `identity` schema: the projections the resolver keeps from the raw
 * topic and the Profiles API reads. Only the resolver (and the one merge
 * routine it exports) writes here. Profile rows are never deleted: a profile
 * merged into another keeps its row with merged_into set, so its id and
 * canonical_id keep resolving to the survivor.
 *
 * Read indexes for the Profiles API (0004):
 * - profiles: one partial index per list sort field over live profiles,
 *   `(org_id, <field>, id)`, read forwards for asc and backwards for desc,
 *   ties broken by id in the same direction; the count uses it too.
 * - events: (org_id, profile_id, event_name, event_timestamp desc, id desc)
 *   for the `event_name` filter, keyset-paged like the resolver's own
 *   (org_id, profile_id, event_timestamp desc, id desc).
 * - search: pg_trgm GIN indexes for partial (substring, ILIKE) matching on
 *   identity_signals.signal_value and canonical_ids.canonical_id (written
 *   once per profile; on identity.profiles every update of a profile added
 *   entries to it). Exact search uses the primary key of identity_signals
 *   and the (org_id, canonical_id) key of profiles.
 */
export const identityMigrations: MigrationSet = {
  schema: 'identity',
  migrations: [
    sqlMigration('0001_profiles_signals_events', `
      create table identity.profiles (
        id uuid primary key,
        org_id uuid not null,
        -- Stable, opaque and unique within the organisation: prf_ + 26 base-32
        -- characters of a hash of the signal that made the profile. Never changes.
        canonical_id text not null,
        -- Set when this profile was merged away: the survivor, always a live
        -- profile (merges re-point whatever pointed here).
        merged_into uuid references identity.profiles (id),
        -- The known userId (the first one the profile was identified with).
        user_id text,
        identified boolean generated always as (user_id is not null) stored,
        traits jsonb not null default '{}',
        -- Event time of the earliest and latest event.
        first_seen_at timestamptz not null,
        last_seen_at timestamptz not null,
        event_count bigint not null default 0,
        -- Distinct context.session.id values (see profile_sessions).
        session_count integer not null default 0,
        engagement_score double precision not null default 0,
        -- { source, medium, campaign, at } of the earliest and latest campaign touch, by event time.
        first_touch jsonb,
        last_touch jsonb,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        constraint profiles_org_canonical_key unique (org_id, canonical_id),
        constraint profiles_not_merged_into_itself check (merged_into is distinct from id)
      );
      create index profiles_merged_into_idx on identity.profiles (org_id, merged_into) where merged_into is not null;

      -- Who a signal belongs to. One owner per (org, type, value): the unit the
      -- resolver serialises on (advisory locks keyed by it).
      create table identity.identity_signals (
        org_id uuid not null,
        signal_type text not null check (signal_type in ('user_id', 'email', 'phone', 'anonymous_id')),
        -- Normalised: email trimmed and lower-cased, phone E.164.
        signal_value text not null,
        profile_id uuid not null references identity.profiles (id),
        confidence real not null,
        first_seen_at timestamptz not null,
        last_seen_at timestamptz not null,
        -- Events of the owning profile that carried this signal.
        occurrence_count bigint not null default 1,
        primary key (org_id, signal_type, signal_value)
      );
      create index identity_signals_profile_idx on identity.identity_signals (org_id, profile_id);

      create table identity.events (
        -- Derived from (org_id, message_id) (eventIdFor), so a replay gives the same ids, and
        -- (since 0009, which dropped the pair's own unique index) the pair is unique through it.
        id uuid primary key,
        org_id uuid not null,
        message_id text not null,
        profile_id uuid not null references identity.profiles (id),
        -- track: the event as sent; else $pageview, $screen, $identify, $alias, $group.
        event_name text not null,
        event_timestamp timestamptz not null,
        received_at timestamptz not null,
        properties jsonb not null default '{}',
        -- As sent, with the server's ip_address; a fingerprint only when consent granted it.
        context jsonb not null default '{}',
        traits jsonb,
        anonymous_id text not null,
        user_id text,
        -- user_id | email | phone | anonymous_id: the signal that found the profile;
        -- new_profile: none did and the event made one.
        resolution_method text not null
          check (resolution_method in ('user_id', 'email', 'phone', 'anonymous_id', 'new_profile')),
        constraint events_org_message_key unique (org_id, message_id)
      );
      -- One profile's events newest first, keyset-paged on (event_timestamp, id).
      create index events_profile_time_idx on identity.events (org_id, profile_id, event_timestamp desc, id desc);

      -- One row per (profile, session id), so session_count moves only on a new session.
      create table identity.profile_sessions (
        org_id uuid not null,
        profile_id uuid not null references identity.profiles (id),
        session_id text not null,
        primary key (org_id, profile_id, session_id)
      );

      -- The first profile a click ID was seen on owns it.
      create table identity.click_ids (
        org_id uuid not null,
        click_type text not null,
        click_id text not null,
        profile_id uuid not null references identity.profiles (id),
        campaign_source text,
        campaign_medium text,
        first_seen_at timestamptz not null,
        last_seen_at timestamptz not null,
        -- True once the click can no longer earn a conversion (its platform's
        -- attribution window has passed, or the platform refused it); set by the
        -- conversion forwarder, never by the resolver. See the package README.
        is_exhausted boolean not null default false,
        exhausted_at timestamptz,
        primary key (org_id, click_type, click_id)
      );
      create index click_ids_profile_idx on identity.click_ids (org_id, profile_id);

      create table identity.fingerprints (
        org_id uuid not null,
        profile_id uuid not null references identity.profiles (id),
        fingerprint_hash text not null,
        -- Share of the profile's fingerprinted events that carried this hash (0..1].
        stability_score real not null default 1,
        first_seen_at timestamptz not null,
        last_seen_at timestamptz not null,
        occurrence_count bigint not null default 1,
        primary key (org_id, profile_id, fingerprint_hash)
      );

      -- Audit of every merge, by the resolver or an admin.
      create table identity.merges (
        id bigint generated always as identity primary key,
        org_id uuid not null,
        source_profile_id uuid not null references identity.profiles (id),
        target_profile_id uuid not null references identity.profiles (id),
        -- identify | trait | alias | admin
        reason text not null,
        -- Who: identity-resolver, or the admin API key / operator.
        actor text not null,
        -- The event that caused it (resolver merges).
        message_id text,
        -- Free text an admin gave.
        note text,
        merged_at timestamptz not null default now()
      );
      create index merges_org_idx on identity.merges (org_id, merged_at);

      -- Transactional outbox: messages written in the transaction whose effects
      -- they describe; the relay produces them in id order and deletes them.
      -- events.resolved rows carry only event_id (event_ids since 0007): the relay reads the event row.
      create table identity.outbox (
        id bigint generated always as identity primary key,
        topic text not null check (topic in ('eventsResolved', 'profilesChanges', 'conversionsCandidates')),
        message_key text,
        payload jsonb,
        event_id uuid,
        created_at timestamptz not null default now(),
        check ((payload is null) = (topic = 'eventsResolved')),
        check ((event_id is not null) = (topic = 'eventsResolved'))
      );
    `),
    sqlMigration('0002_engagement_rules', `
      -- An organisation's engagement rules (libs/contracts EngagementRules, checked by
      -- svcctl before it writes). No row: the default rule set, nothing earns points.
      create table identity.engagement_rules (
        org_id uuid primary key,
        rules jsonb not null check (jsonb_typeof(rules) = 'object' and rules -> 'version' = '1'),
        -- From the document; null: scores never decay.
        half_life_days double precision generated always as ((rules -> 'decay' ->> 'half_life_days')::double precision) stored,
        updated_at timestamptz not null default now()
      );

      -- engagement_score is the score as of engagement_updated_at (the time of the latest
      -- scored event, null until one scores); readers decay it to now (see engagement_decay).
      alter table identity.profiles add column engagement_updated_at timestamptz;

      -- score, as of since, decayed to until under a half-life in days: unchanged without a
      -- half-life, without since or when until is not later; 0 past 60 half-lives or below 1e-9
      -- (PostgreSQL raises an error on float underflow). Mirrors decayScore in engagement.ts.
      create function identity.engagement_decay(score double precision, since timestamptz, until timestamptz, half_life_days double precision)
      returns double precision language sql immutable parallel safe as $$
        select case
          when score = 0 or half_life_days is null or since is null or until is null or until <= since then score
          when extract(epoch from (until - since))::double precision / (half_life_days * 86400) > 60 or abs(score) < 1e-9 then 0
          else (select case when abs(d) < 1e-9 then 0 else d end
                from (select score * power(2::double precision, -(extract(epoch from (until - since))::double precision / (half_life_days * 86400))) as d) x)
        end
      $$;
    `),
    sqlMigration('0003_canonical_ids', `
      -- canonical_id again, in rows written once per profile, for partial search (its trigram
      -- index is among the Profiles API's read indexes). On identity.profiles that index took
      -- about 28 new entries on every update of a profile, i.e. on every event, and its pending
      -- list then flushed inside some resolver transaction, stalling it for up to a second.
      create table identity.canonical_ids (
        org_id uuid not null,
        canonical_id text not null,
        profile_id uuid not null references identity.profiles (id),
        primary key (org_id, canonical_id)
      );
      insert into identity.canonical_ids (org_id, canonical_id, profile_id)
        select org_id, canonical_id, id from identity.profiles;
      -- Statistics now, not at the next auto-analyze: without them the planner reads a whole
      -- organisation's rows for a partial search instead of using the trigram index (50 ms against 5).
      analyze identity.canonical_ids;

      -- Kept by the database, as an index would be, so that every writer of profiles (the
      -- resolver, a replay, a seeding script) keeps it whole. canonical_id never changes.
      create function identity.add_canonical_ids() returns trigger language plpgsql as $$
      begin
        insert into identity.canonical_ids (org_id, canonical_id, profile_id)
          select org_id, canonical_id, id from created;
        return null;
      end
      $$;
      create trigger profiles_canonical_ids after insert on identity.profiles
        referencing new table as created
        for each statement execute function identity.add_canonical_ids();
    `),
    {
      // The Profiles API's read indexes, which lived in a `profile_api` migration set of their own
      // (0001 and 0002 there) until this schema's one owner took them: a database migrated by an
      // earlier release has them already, and every statement here is idempotent.
      name: '0004_read_indexes',
      async up(db) {
        const sorts = PROFILE_SORT_FIELDS.map(
          (f) => `create index if not exists profiles_live_by_${f}_idx on identity.profiles (org_id, ${f}, id) where merged_into is null;`,
        ).join('\n');
        await db.raw(`
          ${sorts}
          create index if not exists events_profile_name_time_idx
            on identity.events (org_id, profile_id, event_name, event_timestamp desc, id desc);
          create extension if not exists pg_trgm;
          create index if not exists identity_signals_value_trgm_idx
            on identity.identity_signals using gin (signal_value gin_trgm_ops);
          drop index if exists identity.profiles_canonical_id_trgm_idx;
          create index if not exists canonical_ids_value_trgm_idx
            on identity.canonical_ids using gin (canonical_id gin_trgm_ops);
        `);
      },
    },
    // Whether a click is exhausted is the conversion forwarder's to know and keep
    // (conversions.exhausted_click_ids, which took the marks over in its 0002, run first).
    sqlMigration('0005_click_exhaustion_to_the_forwarder', 'alter table identity.click_ids drop column if exists is_exhausted, drop column if exists exhausted_at'),
    // The erasure tombstone (profiles.erased) is written to the outbox with the erasure it reports.
    sqlMigration('0006_outbox_profiles_erased', `
      alter table identity.outbox drop constraint outbox_topic_check;
      alter table identity.outbox add constraint outbox_topic_check
        check (topic in ('eventsResolved', 'profilesChanges', 'conversionsCandidates', 'profilesErased'));
    `),
    // One events.resolved row per transaction, naming its events in order, in place of a row per
    // event. Rows an earlier release wrote (event_id) are still relayed.
    sqlMigration('0007_outbox_event_ids', `
      alter table identity.outbox add column event_ids uuid[];
      alter table identity.outbox drop constraint outbox_check1;
      alter table identity.outbox add constraint outbox_events_named
        check ((event_id is not null or event_ids is not null) = (topic = 'eventsResolved'));
    `),
    // The rows written per event name their profile without a foreign key: each such key cost
    // every insert a lookup and a row lock on the profile (about 1.4 per stored event). The
    // resolver, their one writer, writes a profile before anything that names it, in the same
    // transaction, under the profile's row lock; a profile is deleted only by an erasure, which
    // holds the same locks and deletes every row naming it first. Merges, canonical ids and
    // merged_into, written once per profile or merge, keep theirs.
    sqlMigration('0008_per_event_rows_without_foreign_keys', `
      alter table identity.events drop constraint events_profile_id_fkey;
      alter table identity.identity_signals drop constraint identity_signals_profile_id_fkey;
      alter table identity.profile_sessions drop constraint profile_sessions_profile_id_fkey;
      alter table identity.click_ids drop constraint click_ids_profile_id_fkey;
      alter table identity.fingerprints drop constraint fingerprints_profile_id_fkey;
    `),
    // An event's id is derived from (org_id, message_id) (eventIdFor, a SHA-256), so its primary
    // key keeps that pair unique: a second unique index cost every event row one more entry.
    sqlMigration('0009_events_unique_by_id', 'alter table identity.events drop constraint events_org_message_key'),
    sqlMigration('0010_identity_rules', `
      -- An organisation's identity rules (identity-rules.ts, checked by svcctl before it writes).
      -- No row: the deployment's defaults. Not in the log: a replay carries them over.
      create table identity.identity_rules (
        org_id uuid primary key,
        rules jsonb not null check (jsonb_typeof(rules) = 'object' and rules -> 'version' = '1'),
        updated_at timestamptz not null default now()
      );
    `),
    sqlMigration('0011_merge_journal', `
      -- The merge journal (GET /v1-profiles/:id/merges): which identifier linked the two profiles
      -- (identify and trait: the signal the event shared with the source; alias: the previousId's
      -- kind; admin: none). The value is not kept: it is in identity_signals, which erasure clears.
      alter table identity.merges add column signal_type text
        check (signal_type in ('user_id', 'email', 'phone', 'anonymous_id'));
      -- A profile's history, newest first: the merges into it and into the profiles merged into it.
      create index merges_target_idx on identity.merges (org_id, target_profile_id, id);
    `),
    sqlMigration('0012_ingestion_warnings', `
      -- What was stored despite something the pipeline could not use (warnings.ts): the newest
      -- 1,000 per organisation, for svcctl warnings. No value a person gave, only its kind.
      create table identity.ingestion_warnings (
        id bigint generated always as identity primary key,
        org_id uuid not null,
        kind text not null,
        message_id text not null,
        detail text,
        at timestamptz not null default now()
      );
      create index ingestion_warnings_org_idx on identity.ingestion_warnings (org_id, id);
    `),
    sqlMigration('0013_unmerge', `
      -- An alias's previousId, so that a profile's stored events resolve again as they did (an
      -- unmerge): '' for an alias without one; null on an alias stored before this column.
      alter table identity.events add column previous_id text;
      -- A merge undone: by the unmerge that asked for it, or by one that re-resolved its profiles apart.
      alter table identity.merges add column undone_at timestamptz, add column undone_by uuid;
      -- A profile's journal lists the undone merges that had taken one of its rows away too.
      create index merges_undone_source_idx on identity.merges (org_id, source_profile_id, id) where undone_at is not null;
      -- Requests to undo a journal entry, carried out by the resolver (pending → done | failed); one per entry.
      create table identity.unmerges (
        id uuid primary key,
        org_id uuid not null,
        -- An erasure deletes the person's journal entries, and their unmerges with them.
        merge_id bigint not null references identity.merges (id) on delete cascade,
        actor text not null,
        status text not null default 'pending' check (status in ('pending', 'done', 'failed')),
        requested_at timestamptz not null default now(),
        finished_at timestamptz,
        -- done: the two profiles' ids; failed: why.
        profile_ids uuid[],
        reason text,
        constraint unmerges_org_merge_key unique (org_id, merge_id)
      );
      create index unmerges_pending_idx on identity.unmerges (requested_at) where status = 'pending';
      -- The identifiers an unmerge split (the signals that made each of the two profiles): no
      -- profile holds both again, whatever order events arrive in (a replay too). An admin merge
      -- of the profiles holding them lifts the rule; an erasure of either identifier deletes it.
      create table identity.kept_apart (
        org_id uuid not null,
        a_type text not null,
        a_value text not null,
        b_type text not null,
        b_value text not null,
        unmerge_id uuid not null,
        created_at timestamptz not null default now(),
        primary key (org_id, a_type, a_value, b_type, b_value)
      );
    `),
    sqlMigration('0014_phone_restatement', `
      -- Profiles whose phone signals the resolver is to read again from their events under the
      -- rules as they are now (phone-restatement.ts): step 1 drops the numbers the events no longer
      -- give, step 2 attaches or merges by those they do. Queued here for everything stored before
      -- phones were read with libphonenumber, and later for an organisation whose region changes.
      create table identity.phone_restatements (
        org_id uuid not null,
        profile_id uuid not null,
        step smallint not null check (step in (1, 2)),
        primary key (step, org_id, profile_id)
      );
      ${QUEUE_PHONE_RESTATEMENT_SQL('null::uuid')};
    `),
    // With tracing on, the W3C traceparent of the span that wrote a row: the relay sends it in the message's header.
    sqlMigration('0015_outbox_traceparent', 'alter table identity.outbox add column traceparent text'),
  ],
};
