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
  ],
};
