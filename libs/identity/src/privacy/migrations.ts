import { sqlMigration, type MigrationSet } from '@svc/runtime';

/**
 * The `privacy` schema: erasure requests, their outcomes, the suppression
 * list and the audit trail. It lives outside `identity` on purpose: a replay
 * renames `identity` aside and rebuilds it from the raw log, and what is
 * here must survive that (a replay must never resurrect an erased person).
 *
 * Writers (each table one; all through this library's privacy port):
 * - erasure_requests: whoever records a request (the Profiles API's erase
 *   routes, `svcctl erase`), through `requestErasure`; published_at by the
 *   same port's publisher.
 * - erasure_outcomes, suppressions: the identity resolver, which carries the
 *   erasure out (`eraseProfile`); `svcctl unsuppress` lifts a suppression
 *   through `unsuppress` (stamps lifted_at: events received before it stay
 *   out).
 * - subject_keys: the ingest gateway makes a subject's key on its first
 *   event; the identity resolver deletes it with the person (`eraseProfile`);
 *   `svcctl keys rewrap` wraps the keys again under a new master key.
 * - audit_log: append-only (a trigger refuses updates and deletes); a row
 *   per request, outcome and suppression change, written in the same
 *   transaction as the change it records. It never holds an erased value:
 *   profile ids, identifier types and hashes, counts.
 * - identifier_hash_keys: every service and svcctl at start record the ids
 *   of their IDENTIFIER_HASH_KEYS (`checkIdentifierHashKeys`).
 * - Every identifier hash above is also rewritten, value unseen, when a key
 *   is added (`rehashStoredIdentifiers`: the resolver's hourly pass, `svcctl
 *   hashes rewrap`).
 */
export const privacyMigrations: MigrationSet = {
  schema: 'privacy',
  migrations: [
    sqlMigration('0001_erasure', `
      create table privacy.erasure_requests (
        id uuid primary key,
        org_id uuid not null,
        -- How the request named the person: profile (id or canonical_id), user_id, anonymous_id, email, phone.
        target_kind text not null check (target_kind in ('profile', 'user_id', 'anonymous_id', 'email', 'phone')),
        -- For an identifier: its suppression hash, never the value.
        target_hash text,
        -- The live profile the request named when it was recorded.
        profile_id uuid not null,
        canonical_id text not null,
        scope text[] not null,
        -- Who: admin-key:<key id>, or svcctl:<operator>.
        actor text not null,
        reason text,
        requested_at timestamptz not null default clock_timestamp(),
        -- Set once the request is on profiles.erasure-requests.
        published_at timestamptz
      );
      create index erasure_requests_by_profile on privacy.erasure_requests (org_id, profile_id);
      create index erasure_requests_by_canonical on privacy.erasure_requests (org_id, canonical_id);
      create index erasure_requests_unpublished on privacy.erasure_requests (requested_at) where published_at is null;

      create table privacy.erasure_outcomes (
        erasure_id uuid primary key references privacy.erasure_requests (id),
        org_id uuid not null,
        status text not null check (status in ('done', 'failed')),
        failure_reason text,
        -- Every profile erased: the survivor and the profiles merged into it.
        profile_ids uuid[] not null default '{}',
        -- Rows removed, per table.
        counts jsonb not null default '{}',
        completed_at timestamptz not null default clock_timestamp()
      );
      create index erasure_outcomes_profiles on privacy.erasure_outcomes using gin (profile_ids);

      -- Erased identifiers, hashed per organisation (identifierHash): events carrying one are dropped.
      create table privacy.suppressions (
        org_id uuid not null,
        identifier_type text not null check (identifier_type in ('user_id', 'email', 'phone', 'anonymous_id')),
        identifier_hash text not null,
        erasure_id uuid references privacy.erasure_requests (id),
        suppressed_at timestamptz not null default clock_timestamp(),
        primary key (org_id, identifier_type, identifier_hash)
      );

      create table privacy.audit_log (
        id bigint generated always as identity primary key,
        org_id uuid not null,
        at timestamptz not null default clock_timestamp(),
        actor text not null,
        action text not null check (action in ('erasure_requested', 'erasure_done', 'erasure_failed', 'suppressed', 'unsuppressed')),
        erasure_id uuid,
        -- No erased value ever: ids, identifier types and hashes, counts, reasons.
        details jsonb not null default '{}'
      );
      create index audit_log_by_org on privacy.audit_log (org_id, id);
      create function privacy.refuse_rewrite() returns trigger language plpgsql as $$
      begin
        raise exception 'the privacy audit log is append-only';
      end $$;
      create trigger audit_log_append_only before update or delete on privacy.audit_log
        for each row execute function privacy.refuse_rewrite();
    `),
    sqlMigration('0002_subject_keys', `
      -- The data keys that seal events.raw (subject-keys.ts): one per organisation and anonymous id,
      -- named by its suppression hash, wrapped under the master key master_key_id names. An erasure
      -- deletes the rows of the person's anonymous ids, and their events in the log no longer open.
      create table privacy.subject_keys (
        org_id uuid not null,
        subject_hash text not null,
        key_id uuid not null unique,
        wrapped_key bytea not null,
        master_key_id text not null,
        created_at timestamptz not null default clock_timestamp(),
        primary key (org_id, subject_hash)
      );
      create index subject_keys_by_master_key on privacy.subject_keys (master_key_id);
    `),
    sqlMigration('0003_suppression_lifts', `
      -- unsuppress lets new events in, and only those: a lifted suppression stays, with the time it was
      -- lifted, and an event received before then that carries the identifier stays out (a replay too).
      alter table privacy.suppressions add column lifted_at timestamptz;
    `),
    sqlMigration('0004_keyed_identifier_hashes', `
      -- Identifier hashes become keyed (hash.ts); rehash.ts brings stored ones under each new key. The
      -- audit log stays append-only but for that one change: in a transaction that declares it, a row's
      -- details may change in their identifier_hash values, and in nothing else.
      create or replace function privacy.refuse_rewrite() returns trigger language plpgsql as $$
      begin
        if tg_op = 'UPDATE' and current_setting('svc.rehash_audit', true) = 'on'
           and (new.id, new.org_id, new.at, new.actor, new.action) = (old.id, old.org_id, old.at, old.actor, old.action)
           and new.erasure_id is not distinct from old.erasure_id
           and regexp_replace(new.details::text, '"identifier_hash": "[^"]*"', '', 'g')
             = regexp_replace(old.details::text, '"identifier_hash": "[^"]*"', '', 'g') then
          return new;
        end if;
        raise exception 'the privacy audit log is append-only';
      end $$;

      -- The keys the stored identifier hashes are made with, by id (a hash of the key, never the key), one
      -- per layer: a process given another list refuses to start (checkIdentifierHashKeys) rather than
      -- hash where nothing matches.
      create table privacy.identifier_hash_keys (
        layer int primary key check (layer >= 1),
        key_id text not null unique,
        added_at timestamptz not null default clock_timestamp()
      );
    `),
  ],
};
