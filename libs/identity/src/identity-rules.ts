import { Problems, isObject, type DocumentProblem } from '@svc/contracts';
import type { Db } from '@svc/runtime';
import { isPhoneDefault, type PhoneDefault } from './signals';

/**
 * An organisation's identity rules: how its identifiers are read before they
 * stitch profiles. Set with `svcctl identity-rules set` (checked whole,
 * stored only when every field is valid), read by the identity resolver on
 * every batch that needs them and by the Profiles API where it normalises
 * what it is asked for as the resolver did.
 *
 * ```json
 * { "version": 1, "phone": { "default_region": "GB" } }
 * ```
 *
 * - `phone.default_region`: the country (ISO 3166-1 alpha-2, `GB`) whose
 *   national numbers the organisation's users write (`020 7946 0958`); a
 *   number written with its country code keeps its own. Absent or null: the
 *   deployment's PHONE_DEFAULT_COUNTRY_CODE.
 */
export interface IdentityRules {
  version: 1;
  phone: { default_region: string | null };
}

/** What an organisation without rules has: the deployment's defaults. */
export const DEFAULT_IDENTITY_RULES: IdentityRules = { version: 1, phone: { default_region: null } };

export type IdentityRulesCheck = { ok: true; rules: IdentityRules } | { ok: false; problems: DocumentProblem[] };

/** Every problem of a document, each with its JSON path, or the document normalised (every field present). */
export function checkIdentityRules(doc: unknown): IdentityRulesCheck {
  const p = new Problems();
  if (!isObject(doc)) {
    p.add('$', 'must be a JSON object with version and optionally phone');
    return { ok: false, problems: p.list };
  }
  p.fields(doc, '$', ['version', 'phone']);
  if (doc.version !== 1) p.add('$.version', 'must be 1');
  let region: string | null = null;
  if (doc.phone !== undefined && doc.phone !== null) {
    if (!isObject(doc.phone)) {
      p.add('$.phone', 'must be an object {"default_region": "<ISO 3166-1 alpha-2 code>"} or null');
    } else {
      p.fields(doc.phone, '$.phone', ['default_region']);
      const r = doc.phone.default_region;
      if (r !== undefined && r !== null) {
        if (typeof r !== 'string' || !/^[A-Z]{2}$/.test(r) || !isPhoneDefault(r)) {
          p.add('$.phone.default_region', 'must be a country as an ISO 3166-1 alpha-2 code in capitals (GB, DE, IN, US), or null');
        } else {
          region = r;
        }
      }
    }
  }
  return p.list.length > 0 ? { ok: false, problems: p.list } : { ok: true, rules: { version: 1, phone: { default_region: region } } };
}

export interface StoredIdentityRules {
  orgId: string;
  /** false: nothing stored, `rules` are the defaults. */
  configured: boolean;
  rules: IdentityRules;
  updatedAt: string | null;
}

interface Row {
  org_id: string;
  rules: unknown;
  updated_at: Date;
}

function view(orgId: string, row: Row | undefined): StoredIdentityRules {
  if (!row) return { orgId, configured: false, rules: DEFAULT_IDENTITY_RULES, updatedAt: null };
  const check = checkIdentityRules(row.rules);
  return { orgId, configured: true, rules: check.ok ? check.rules : (row.rules as IdentityRules), updatedAt: row.updated_at.toISOString() };
}

/** Stores (replaces) the organisation's rules: a document checkIdentityRules accepted. They apply from the next batch on. */
export async function setIdentityRules(db: Db, orgId: string, rules: IdentityRules): Promise<StoredIdentityRules> {
  const { rows } = (await db.raw(
    `insert into identity.identity_rules (org_id, rules) values (?, ?::jsonb)
     on conflict (org_id) do update set rules = excluded.rules, updated_at = now()
     returning org_id, rules, updated_at`,
    [orgId, JSON.stringify(rules)],
  )) as { rows: Row[] };
  return view(orgId, rows[0]);
}

/** The organisation's rules, or the defaults when none are stored. */
export async function getIdentityRules(db: Db, orgId: string): Promise<StoredIdentityRules> {
  const row = (await db('identity.identity_rules').where({ org_id: orgId }).first('org_id', 'rules', 'updated_at')) as Row | undefined;
  return view(orgId, row);
}

/**
 * How each of `orgIds` reads a phone written without its country: its rules'
 * region, else `fallback` (the deployment's calling code). One statement; a
 * stored document that no longer passes the check (written around svcctl)
 * falls back too.
 */
export async function phoneDefaultsOf(db: Db, orgIds: readonly string[], fallback: PhoneDefault): Promise<(orgId: string) => PhoneDefault> {
  if (orgIds.length === 0) return () => fallback;
  const { rows } = (await db.raw(
    `select org_id, rules -> 'phone' ->> 'default_region' as region from identity.identity_rules where org_id = any(?::uuid[])`,
    [[...new Set(orgIds)]],
  )) as { rows: Array<{ org_id: string; region: string | null }> };
  const regions = new Map(rows.flatMap((r) => (r.region !== null && isPhoneDefault(r.region) ? [[r.org_id, r.region] as const] : [])));
  return (orgId) => regions.get(orgId) ?? fallback;
}

/** phoneDefaultsOf for one organisation. */
export async function phoneDefaultOf(db: Db, orgId: string, fallback: PhoneDefault): Promise<PhoneDefault> {
  return (await phoneDefaultsOf(db, [orgId], fallback))(orgId);
}
