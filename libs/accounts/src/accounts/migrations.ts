import { sqlMigration, type MigrationSet } from '@svc/runtime';

/** Organisations and API keys: the tables every service authenticates against. */
export const accountsMigrations: MigrationSet = {
  schema: 'accounts',
  migrations: [
    sqlMigration('0001_organizations_and_api_keys', `
      create table accounts.organizations (
        id uuid primary key default gen_random_uuid(),
        name text not null check (length(name) between 1 and 200),
        plan_state text not null default 'active'
          check (plan_state in ('active', 'grace', 'limit_reached', 'paused')),
        -- Unique events per calendar month; null means no quota.
        monthly_event_quota bigint check (monthly_event_quota >= 0),
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );

      create table accounts.api_keys (
        id uuid primary key default gen_random_uuid(),
        org_id uuid not null references accounts.organizations (id),
        type text not null check (type in ('write', 'read', 'admin')),
        -- SHA-256 of the whole key. The key itself is never stored.
        key_hash bytea not null unique,
        -- The first characters of the key, so an operator can tell keys apart.
        key_hint text not null,
        ip_allowlist cidr[] not null default '{}',
        origin_allowlist text[] not null default '{}',
        rate_cap_per_minute integer check (rate_cap_per_minute > 0),
        created_at timestamptz not null default now(),
        revoked_at timestamptz,
        -- Set when the key was rotated: the key that replaced it.
        replaced_by uuid references accounts.api_keys (id)
      );
      create index api_keys_org_idx on accounts.api_keys (org_id);
    `),
    // Unique events per organisation per calendar month (UTC). The identity
    // resolver adds to it in the transaction that stores new events, so a
    // retried messageId is never counted twice; the gateway's quota check reads it.
    sqlMigration('0002_monthly_usage', `
      create table accounts.monthly_usage (
        org_id uuid not null references accounts.organizations (id),
        month date not null,
        unique_events bigint not null default 0,
        primary key (org_id, month)
      );
    `),
  ],
};
