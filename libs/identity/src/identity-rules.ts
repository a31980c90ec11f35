import { Limits, Problems, isObject, type DocumentProblem } from '@svc/contracts';
import { preparedRaw, type Db } from '@svc/runtime';
import { orgDocumentStore, type StoredDocument } from './org-documents';
import { queuePhoneRestatement } from './phone-restatement';
import { SIGNAL_TYPES, isPhoneRegion, normaliseEmail, normalisePhone, signalKey, type PhoneDefault, type SignalType } from './signals';

/**
 * An organisation's identity rules: how its identifiers are read and how far
 * they may stitch profiles. Set with `svcctl identity-rules set` (checked
 * whole, stored only when every field is valid), read by the identity
 * resolver on every batch and by the Profiles API where it normalises what it
 * is asked for as the resolver did.
 *
 * ```json
 * {
 *   "version": 1,
 *   "phone": { "default_region": "GB" },
 *   "limits": { "user_id": 1, "email": 5, "anonymous_id": 300 },
 *   "blocked": [{ "type": "email", "value": "support@acme.io" }, { "type": "user_id", "value": "test-user" }],
 *   "priority": ["phone", "email", "anonymous_id"]
 * }
 * ```
 *
 * - `phone.default_region`: the country (ISO 3166-1 alpha-2, `GB`) whose
 *   national numbers the organisation's users write (`020 7946 0958`); a
 *   number written with its country code keeps its own. Absent or null: the
 *   deployment's PHONE_DEFAULT_COUNTRY_CODE.
 * - `limits`: the most identifiers of a type one profile may hold. An event
 *   whose identifier would go over is still stored, on the profile its
 *   strongest identifier names, without that identifier; a merge that would
 *   take the survivor over is refused. Both are ingestion warnings.
 * - `blocked`: values that never stitch (a support address, a test user), on
 *   top of the spec's denylist: an event carrying one is stored as if it did
 *   not. Emails as any case, phones in international form (`+44…`).
 * - `priority`: which identifier decides an event's profile when its email,
 *   phone and anonymousId name different profiles (identified ones first, as
 *   always). A userId always decides first, and two identified profiles are
 *   never merged but by alias or an admin.
 */
export interface IdentityRules {
  version: 1;
  phone: { default_region: string | null };
  limits: Partial<Record<SignalType, number>>;
  blocked: Array<{ type: BlockableType; value: string }>;
  priority: LinkingType[];
}

/** What may be blocked: an anonymousId is what an event is stored under when nothing else names a profile. */
export const BLOCKABLE_TYPES = ['user_id', 'email', 'phone'] as const;
export type BlockableType = (typeof BLOCKABLE_TYPES)[number];
/** The identifiers an event without a userId is matched by, in the default order. */
export const LINKING_TYPES = ['email', 'phone', 'anonymous_id'] as const;
export type LinkingType = (typeof LINKING_TYPES)[number];

export const IdentityRuleLimits = {
  maxBlocked: 1_000,
  /** Per identifier type: at least 1 (the first identifier makes the profile). */
  maxLimit: 100_000,
};

/** What an organisation without rules has: the deployment's defaults. */
export const DEFAULT_IDENTITY_RULES: IdentityRules = { version: 1, phone: { default_region: null }, limits: {}, blocked: [], priority: [...LINKING_TYPES] };

export type IdentityRulesCheck = { ok: true; rules: IdentityRules } | { ok: false; problems: DocumentProblem[] };

const FIELDS = ['version', 'phone', 'limits', 'blocked', 'priority'];

/** Every problem of a document, each with its JSON path, or the document normalised (every field present, blocked values normalised). */
export function checkIdentityRules(doc: unknown): IdentityRulesCheck {
  const p = new Problems();
  if (!isObject(doc)) {
    p.add('$', `must be a JSON object with version and optionally ${FIELDS.slice(1).join(', ')}`);
    return { ok: false, problems: p.list };
  }
  p.fields(doc, '$', FIELDS);
  if (doc.version !== 1) p.add('$.version', 'must be 1');
  const rules: IdentityRules = {
    version: 1,
    phone: { default_region: checkRegion(doc.phone, p) },
    limits: checkLimits(doc.limits, p),
    blocked: checkBlocked(doc.blocked, p),
    priority: checkPriority(doc.priority, p),
  };
  return p.list.length > 0 ? { ok: false, problems: p.list } : { ok: true, rules };
}

function checkRegion(phone: unknown, p: Problems): string | null {
  if (phone === undefined || phone === null) return null;
  if (!isObject(phone)) {
    p.add('$.phone', 'must be an object {"default_region": "<ISO 3166-1 alpha-2 code>"} or null');
    return null;
  }
  p.fields(phone, '$.phone', ['default_region']);
  const r = phone.default_region;
  if (r === undefined || r === null) return null;
  if (typeof r !== 'string' || !isPhoneRegion(r)) {
    p.add('$.phone.default_region', 'must be a country as an ISO 3166-1 alpha-2 code in capitals (GB, DE, IN, US), or null');
    return null;
  }
  return r;
}

function checkLimits(limits: unknown, p: Problems): IdentityRules['limits'] {
  if (limits === undefined || limits === null) return {};
  if (!isObject(limits)) {
    p.add('$.limits', `must be an object of ${SIGNAL_TYPES.join(', ')} to the most of each one profile may hold`);
    return {};
  }
  p.fields(limits, '$.limits', SIGNAL_TYPES);
  const out: IdentityRules['limits'] = {};
  for (const type of SIGNAL_TYPES) {
    const n = limits[type];
    if (n === undefined || n === null) continue;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > IdentityRuleLimits.maxLimit) {
      p.add(`$.limits.${type}`, `must be a whole number from 1 to ${IdentityRuleLimits.maxLimit}, or null for no limit`);
    } else {
      out[type] = n;
    }
  }
  return out;
}

function checkBlocked(blocked: unknown, p: Problems): IdentityRules['blocked'] {
  if (blocked === undefined || blocked === null) return [];
  if (!Array.isArray(blocked) || blocked.length > IdentityRuleLimits.maxBlocked) {
    p.add('$.blocked', `must be an array of at most ${IdentityRuleLimits.maxBlocked} {"type", "value"} objects`);
    return [];
  }
  const out: IdentityRules['blocked'] = [];
  blocked.forEach((entry, i) => {
    const path = `$.blocked[${i}]`;
    if (!isObject(entry)) {
      p.add(path, `must be an object {"type": "${BLOCKABLE_TYPES.join('" | "')}", "value": "..."}`);
      return;
    }
    p.fields(entry, path, ['type', 'value']);
    const { type, value } = entry;
    if (typeof type !== 'string' || !(BLOCKABLE_TYPES as readonly string[]).includes(type)) {
      p.add(`${path}.type`, `must be one of ${BLOCKABLE_TYPES.join(', ')}`);
      return;
    }
    const normalised = typeof value === 'string' ? normaliseBlocked(type as BlockableType, value) : null;
    if (normalised === null) {
      p.add(`${path}.value`, BLOCKED_VALUE[type as BlockableType]);
      return;
    }
    out.push({ type: type as BlockableType, value: normalised });
  });
  return out;
}

const BLOCKED_VALUE: Record<BlockableType, string> = {
  user_id: `must be a userId of 1 to ${Limits.identifierMaxLength} characters`,
  email: 'must be an email address',
  phone: 'must be a valid phone number in international form (+44 20 7946 0958)',
};

/** A blocked value as the signals hold it: an email lower-cased, a phone E.164 (international form only: it names its country). */
function normaliseBlocked(type: BlockableType, value: string): string | null {
  switch (type) {
    case 'email':
      return normaliseEmail(value);
    case 'phone':
      return value.trim().startsWith('+') ? normalisePhone(value) : null;
    case 'user_id':
      return value.length > 0 && value.length <= Limits.identifierMaxLength && !value.includes('\u0000') ? value : null;
  }
}

function checkPriority(priority: unknown, p: Problems): LinkingType[] {
  if (priority === undefined || priority === null) return [...LINKING_TYPES];
  const valid =
    Array.isArray(priority) && priority.length === LINKING_TYPES.length && LINKING_TYPES.every((t) => priority.includes(t));
  if (!valid) {
    p.add('$.priority', `must list ${LINKING_TYPES.join(', ')}, each once, strongest first`);
    return [...LINKING_TYPES];
  }
  return priority as LinkingType[];
}

/** The rules as the resolver applies them. */
export interface CompiledIdentityRules {
  phoneDefault: PhoneDefault;
  limits: IdentityRules['limits'];
  /** signalKey of each blocked value. */
  blocked: ReadonlySet<string>;
  priority: readonly LinkingType[];
}

export function compileIdentityRules(rules: IdentityRules, fallbackPhoneDefault: PhoneDefault): CompiledIdentityRules {
  return {
    phoneDefault: rules.phone.default_region ?? fallbackPhoneDefault,
    limits: rules.limits,
    blocked: new Set(rules.blocked.map((b) => signalKey(b.type, b.value))),
    priority: rules.priority,
  };
}

/**
 * The compiled rules of each of `orgIds` (the defaults for those with none),
 * in one statement. A stored document that no longer passes the check
 * (written around svcctl) applies the defaults; its organisation is listed
 * in `invalid` for the caller to report.
 */
export async function readIdentityRules(
  db: Db,
  orgIds: readonly string[],
  fallbackPhoneDefault: PhoneDefault,
): Promise<{ rules: (orgId: string) => CompiledIdentityRules; invalid: string[] }> {
  const defaults = compileIdentityRules(DEFAULT_IDENTITY_RULES, fallbackPhoneDefault);
  if (orgIds.length === 0) return { rules: () => defaults, invalid: [] };
  const { rows } = (await preparedRaw(db, 'select org_id, rules from identity.identity_rules where org_id = any(?::uuid[])', [[...new Set(orgIds)]])) as {
    rows: Array<{ org_id: string; rules: unknown }>;
  };
  const compiled = new Map<string, CompiledIdentityRules>();
  const invalid: string[] = [];
  for (const row of rows) {
    const check = checkIdentityRules(row.rules);
    if (check.ok) compiled.set(row.org_id, compileIdentityRules(check.rules, fallbackPhoneDefault));
    else invalid.push(row.org_id);
  }
  return { rules: (orgId) => compiled.get(orgId) ?? defaults, invalid };
}

export type StoredIdentityRules = StoredDocument<IdentityRules>;

const store = orgDocumentStore('identity.identity_rules', checkIdentityRules, DEFAULT_IDENTITY_RULES);

/**
 * Stores (replaces) the organisation's rules: a document checkIdentityRules
 * accepted. They apply from the next batch on; when the region of national
 * phone numbers changes, the numbers stored under the old one are queued to
 * be read again (phone-restatement.ts).
 */
export async function setIdentityRules(db: Db, orgId: string, rules: IdentityRules): Promise<StoredIdentityRules> {
  return db.transaction(async (trx) => {
    const before = await store.get(trx, orgId);
    const stored = await store.set(trx, orgId, rules);
    if (before.rules.phone.default_region !== rules.phone.default_region) await queuePhoneRestatement(trx, orgId);
    return stored;
  });
}

/** The organisation's rules, or the defaults when none are stored. */
export const getIdentityRules = store.get;

/** How the organisation reads a phone written without its country: its rules' region, else `fallback` (the deployment's calling code). */
export async function phoneDefaultOf(db: Db, orgId: string, fallback: PhoneDefault): Promise<PhoneDefault> {
  return (await readIdentityRules(db, [orgId], fallback)).rules(orgId).phoneDefault;
}
