import { sqlMigration, type MigrationSet } from '@svc/runtime';

/**
 * Consent records: an append-only audit trail. The service has no update or
 * delete path, and the database refuses one too, so a bug or a hand-written
 * statement cannot rewrite history.
 */
export const consentMigrations: MigrationSet = {
  schema: 'consent',
  migrations: [
    sqlMigration('0001_records', `
      create table consent.records (
        id uuid primary key default gen_random_uuid(),
        org_id uuid not null,
        anonymous_id text not null,
        user_id text,
        -- purpose -> granted (true) / denied (false)
        purposes jsonb not null,
        source text not null,
        client_timestamp timestamptz,
        received_at timestamptz not null default clock_timestamp(),
        key_id uuid not null,
        client_ip inet,
        user_agent text,
        -- Set once the decision is on the consent.decisions topic.
        published_at timestamptz
      );
      create index records_by_anonymous on consent.records (org_id, anonymous_id, received_at desc, id desc);
      create index records_by_user on consent.records (org_id, user_id, received_at desc, id desc) where user_id is not null;
      create index records_unpublished on consent.records (received_at) where published_at is null;

      create function consent.refuse_rewrite() returns trigger language plpgsql as $$
      begin
        if tg_op = 'UPDATE' and old.published_at is null and new.published_at is not null
           and (to_jsonb(old) - 'published_at') = (to_jsonb(new) - 'published_at') then
          return new; -- marking a record published is the one change allowed
        end if;
        raise exception 'consent records are append-only';
      end $$;
      create trigger records_append_only before update or delete on consent.records
        for each row execute function consent.refuse_rewrite();
    `),
    // Erasure (profiles.erased): a person's records keep only that a decision existed. The subject
    // (anonymous_id, user_id) and the client's details (IP, user agent) are cleared, redacted_at and
    // the erasure's id set; the purposes, their values, the source, the times and the key that wrote
    // it stay. That redaction is the one other change the trigger allows, once per record.
    sqlMigration('0002_erasure_redaction', `
      alter table consent.records alter column anonymous_id drop not null;
      alter table consent.records add column redacted_at timestamptz, add column erasure_id uuid;
      alter table consent.records add constraint records_subject_unless_redacted check (anonymous_id is not null or redacted_at is not null);

      create or replace function consent.refuse_rewrite() returns trigger language plpgsql as $$
      declare
        cleared constant text[] := array['anonymous_id', 'user_id', 'client_ip', 'user_agent', 'redacted_at', 'erasure_id', 'published_at'];
      begin
        if tg_op = 'UPDATE' and old.published_at is null and new.published_at is not null
           and (to_jsonb(old) - 'published_at') = (to_jsonb(new) - 'published_at') then
          return new; -- marking a record published
        end if;
        if tg_op = 'UPDATE' and old.redacted_at is null and new.redacted_at is not null and new.erasure_id is not null
           and new.anonymous_id is null and new.user_id is null and new.client_ip is null and new.user_agent is null
           and new.published_at is not null and (old.published_at is null or new.published_at = old.published_at)
           and (to_jsonb(old) - cleared) = (to_jsonb(new) - cleared) then
          return new; -- the erasure's redaction (an unpublished record is never published afterwards)
        end if;
        raise exception 'consent records are append-only';
      end $$;
    `),
  ],
};
