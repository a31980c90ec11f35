import { sqlMigration, type MigrationSet } from '@svc/runtime';

/**
 * The conversion forwarder's schema, written by it alone: connectors (secrets
 * sealed, see the forwarder's secrets.ts), the delivery queue and the clicks
 * it has exhausted. Each queued conversion is a row written before any
 * call to a platform, so a restart resumes exactly where it stopped.
 */
export const conversionsMigrations: MigrationSet = {
  schema: 'conversions',
  migrations: [
    sqlMigration('0001_connectors_and_queue', `
      create table conversions.connectors (
        id uuid primary key default gen_random_uuid(),
        org_id uuid not null references accounts.organizations (id),
        platform text not null check (platform in ('google_ads', 'meta')),
        -- Non-secret settings (ids, endpoint overrides), shown by the CLI.
        settings jsonb not null,
        -- AES-256-GCM sealed JSON of the secret settings; never shown.
        sealed_secrets bytea not null,
        -- A custom set of qualifying event names; null = the spec's defaults.
        event_names text[] check (event_names is null or cardinality(event_names) > 0),
        state text not null default 'active' check (state in ('active', 'disabled')),
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      -- One active connector per platform per organisation: order ids
      -- de-duplicate per (organisation, platform), so a second one could
      -- never receive an order the first already had.
      create unique index connectors_one_active_per_platform
        on conversions.connectors (org_id, platform) where state = 'active';

      create table conversions.queue (
        id bigint generated always as identity primary key,
        org_id uuid not null,
        connector_id uuid not null references conversions.connectors (id),
        platform text not null,
        message_id text not null,
        event_id uuid not null,
        profile_id uuid not null,
        event_name text not null,
        order_id text,
        -- The request's input (platforms/types.ts Conversion): hashed contact
        -- details and the click only, never clear-text email or phone.
        conversion jsonb not null,
        status text not null default 'queued' check (status in ('queued', 'sent', 'failed', 'dead')),
        attempts integer not null default 0,
        last_error text,
        last_status integer,
        next_attempt_at timestamptz not null default now(),
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        sent_at timestamptz
      );
      -- A redelivered candidate is queued once; an order is sent once per platform.
      create unique index queue_message_once on conversions.queue (org_id, platform, message_id);
      create unique index queue_order_once on conversions.queue (org_id, platform, order_id) where order_id is not null;
      create index queue_due on conversions.queue (next_attempt_at) where status = 'queued';
      create index queue_by_org on conversions.queue (org_id, id desc);
    `),
    // Exhausted clicks are the forwarder's knowledge, so they live in its schema: before, the
    // forwarder updated identity.click_ids, a table of the resolver's, and a replay had to carry
    // its marks over. The marks already made come along; the identity columns are dropped by
    // identity 0005, which runs after this (allMigrations puts this schema first).
    sqlMigration('0002_exhausted_click_ids', `
      create table conversions.exhausted_click_ids (
        org_id uuid not null,
        click_type text not null,
        click_id text not null,
        exhausted_at timestamptz not null default now(),
        primary key (org_id, click_type, click_id)
      );
      do $$
      begin
        if exists (select 1 from information_schema.columns
                   where table_schema = 'identity' and table_name = 'click_ids' and column_name = 'is_exhausted') then
          insert into conversions.exhausted_click_ids (org_id, click_type, click_id, exhausted_at)
            select org_id, click_type, click_id, coalesce(exhausted_at, now()) from identity.click_ids where is_exhausted
            on conflict do nothing;
        end if;
      end
      $$;
    `),
    // With tracing on, the W3C traceparent of the span that queued a row: its delivery's span is a child of it.
    sqlMigration('0003_queue_traceparent', 'alter table conversions.queue add column traceparent text'),
  ],
};
