import { Type, type Static } from '@sinclair/typebox';
import { Problems, isObject, type DocumentProblem } from './document-problems';
import { Limits } from './limits';

/**
 * An organisation's engagement rules: how many points each ingested event
 * adds to its profile's `engagement_score`, and how fast the score decays.
 * Configured with `svcctl rules set` (never over HTTP), stored by the
 * identity resolver, evaluated on every newly stored event.
 *
 * ```json
 * {
 *   "version": 1,
 *   "rules": [
 *     { "event": "purchase", "points": 10, "where": [{ "property": "plan", "op": "eq", "value": "pro" }] },
 *     { "event": "$pageview", "points": 1, "where": [{ "property": "path", "op": "eq", "value": "/pricing" }] }
 *   ],
 *   "decay": { "half_life_days": 30 }
 * }
 * ```
 *
 * - `event` matches the stored event name exactly (case-sensitive): a track
 *   event's own name, `$pageview` for page, `$screen`, `$identify`,
 *   `$alias`, `$group` for the others.
 * - Every condition of `where` must hold (and). Several rules may match one
 *   event; their points add up.
 * - `property` is a path into the event's `properties`: `plan`, or dotted
 *   `cart.total` (each segment names a key of an object; arrays are not
 *   walked; a key that itself contains a dot cannot be addressed).
 * - Operators: `eq` (same JSON type and value), `neq` (not `eq`, so a missing
 *   property matches), `gt`/`gte`/`lt`/`lte` (the property is a number, or a
 *   plain decimal string such as `"49.50"`; anything else never matches),
 *   `in` (`eq` to one of a list), `exists` (present and not null; with
 *   `"value": false`, missing or null).
 * - `decay` (optional): the score halves every `half_life_days` without new
 *   points; absent or null, it never decays.
 */

export const ENGAGEMENT_OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'exists'] as const;
export type EngagementOperator = (typeof ENGAGEMENT_OPERATORS)[number];

export const EngagementRuleLimits = {
  maxRules: 200,
  maxConditions: 20,
  /** Points of one rule lie in -maxPoints..maxPoints. */
  maxPoints: 1000,
  maxInValues: 100,
  maxStringValueLength: 1000,
  maxPathLength: 200,
  maxPathSegments: 10,
  maxPathSegmentLength: 100,
  maxDescriptionLength: 500,
  maxHalfLifeDays: 3650,
} as const;

const L = EngagementRuleLimits;
const SEGMENT = `[^.]{1,${L.maxPathSegmentLength}}`;
/** `plan`, `cart.total`: dot-separated keys, none empty. */
export const PROPERTY_PATH_PATTERN = `^${SEGMENT}(\\.${SEGMENT}){0,${L.maxPathSegments - 1}}$`;

const Path = Type.String({ minLength: 1, maxLength: L.maxPathLength, pattern: PROPERTY_PATH_PATTERN });
const Scalar = Type.Union([Type.String({ maxLength: L.maxStringValueLength }), Type.Number(), Type.Boolean()]);

export const EngagementConditionSchema = Type.Union([
  Type.Object({ property: Path, op: Type.Union([Type.Literal('eq'), Type.Literal('neq')]), value: Scalar }, { additionalProperties: false }),
  Type.Object(
    { property: Path, op: Type.Union([Type.Literal('gt'), Type.Literal('gte'), Type.Literal('lt'), Type.Literal('lte')]), value: Type.Number() },
    { additionalProperties: false },
  ),
  Type.Object(
    { property: Path, op: Type.Literal('in'), value: Type.Array(Scalar, { minItems: 1, maxItems: L.maxInValues }) },
    { additionalProperties: false },
  ),
  Type.Object({ property: Path, op: Type.Literal('exists'), value: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
]);
export type EngagementCondition = Static<typeof EngagementConditionSchema>;

export const EngagementRuleSchema = Type.Object(
  {
    /** The stored event name, matched exactly. */
    event: Type.String({ minLength: 1, maxLength: Limits.eventNameMaxLength }),
    points: Type.Number({ minimum: -L.maxPoints, maximum: L.maxPoints }),
    where: Type.Optional(Type.Array(EngagementConditionSchema, { maxItems: L.maxConditions })),
    /** Free text for the people who maintain the rules. */
    description: Type.Optional(Type.String({ maxLength: L.maxDescriptionLength })),
  },
  { additionalProperties: false },
);
export type EngagementRule = Static<typeof EngagementRuleSchema>;

export const EngagementDecaySchema = Type.Object(
  { half_life_days: Type.Number({ exclusiveMinimum: 0, maximum: L.maxHalfLifeDays }) },
  { additionalProperties: false },
);

export const EngagementRulesSchema = Type.Object(
  {
    version: Type.Literal(1),
    rules: Type.Array(EngagementRuleSchema, { maxItems: L.maxRules }),
    decay: Type.Optional(Type.Union([EngagementDecaySchema, Type.Null()])),
  },
  { $id: 'EngagementRules', additionalProperties: false },
);
export type EngagementRules = Static<typeof EngagementRulesSchema>;

/** What an organisation without configured rules has: no event earns points, the score never decays. */
export const DEFAULT_ENGAGEMENT_RULES: EngagementRules = { version: 1, rules: [], decay: null };

export type EngagementRulesCheck = { ok: true; rules: EngagementRules } | { ok: false; problems: DocumentProblem[] };

const chars = (s: string): number => [...s].length;
const isScalar = (v: unknown): v is string | number | boolean =>
  (typeof v === 'string' && chars(v) <= L.maxStringValueLength) || (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean';
const SCALAR = `a string (at most ${L.maxStringValueLength} characters), a number or a boolean`;
const PATH_RE = new RegExp(PROPERTY_PATH_PATTERN, 'u');

/**
 * Checks a rules document and returns every problem, each with its JSON path
 * (`$.rules[0].where[1].value`), or the document normalised: `where` always
 * present, `exists` with its value, `decay` null when absent. Agrees with
 * EngagementRulesSchema: it accepts exactly what the schema accepts.
 */
export function checkEngagementRules(doc: unknown): EngagementRulesCheck {
  const p = new Problems();
  if (!isObject(doc)) {
    p.add('$', 'must be a JSON object with version, rules and optionally decay');
    return { ok: false, problems: p.list };
  }
  p.fields(doc, '$', ['version', 'rules', 'decay']);
  if (doc.version !== 1) p.add('$.version', 'must be 1');

  const rules: EngagementRule[] = [];
  if (!Array.isArray(doc.rules)) {
    p.add('$.rules', `must be an array of at most ${L.maxRules} rules`);
  } else if (doc.rules.length > L.maxRules) {
    p.add('$.rules', `must hold at most ${L.maxRules} rules (got ${doc.rules.length})`);
  } else {
    doc.rules.forEach((raw, i) => {
      const rule = checkRule(raw, `$.rules[${i}]`, p);
      if (rule) rules.push(rule);
    });
  }

  let decay: EngagementRules['decay'] = null;
  if (doc.decay !== undefined && doc.decay !== null) {
    if (!isObject(doc.decay)) {
      p.add('$.decay', 'must be an object {"half_life_days": <days>} or null');
    } else {
      p.fields(doc.decay, '$.decay', ['half_life_days']);
      const h = doc.decay.half_life_days;
      if (typeof h !== 'number' || !Number.isFinite(h) || h <= 0 || h > L.maxHalfLifeDays) {
        p.add('$.decay.half_life_days', `must be a number of days greater than 0 and at most ${L.maxHalfLifeDays}`);
      } else {
        decay = { half_life_days: h };
      }
    }
  }
  return p.list.length > 0 ? { ok: false, problems: p.list } : { ok: true, rules: { version: 1, rules, decay } };
}

function checkRule(raw: unknown, path: string, p: Problems): EngagementRule | undefined {
  if (!isObject(raw)) {
    p.add(path, 'must be an object with event, points and optionally where and description');
    return undefined;
  }
  const start = p.list.length;
  p.fields(raw, path, ['event', 'points', 'where', 'description']);
  const { event, points, where, description } = raw;
  if (typeof event !== 'string' || event.length === 0 || chars(event) > Limits.eventNameMaxLength) {
    p.add(`${path}.event`, `must be an event name of 1 to ${Limits.eventNameMaxLength} characters, as stored ($pageview for page events)`);
  }
  if (typeof points !== 'number' || !Number.isFinite(points) || Math.abs(points) > L.maxPoints) {
    p.add(`${path}.points`, `must be a number from -${L.maxPoints} to ${L.maxPoints}`);
  }
  const conditions: EngagementCondition[] = [];
  if (where !== undefined) {
    if (!Array.isArray(where)) {
      p.add(`${path}.where`, `must be an array of at most ${L.maxConditions} conditions`);
    } else if (where.length > L.maxConditions) {
      p.add(`${path}.where`, `must hold at most ${L.maxConditions} conditions (got ${where.length})`);
    } else {
      where.forEach((c, j) => {
        const condition = checkCondition(c, `${path}.where[${j}]`, p);
        if (condition) conditions.push(condition);
      });
    }
  }
  if (description !== undefined && (typeof description !== 'string' || chars(description) > L.maxDescriptionLength)) {
    p.add(`${path}.description`, `must be a string of at most ${L.maxDescriptionLength} characters`);
  }
  if (p.list.length > start) return undefined;
  return {
    event: event as string,
    points: points as number,
    where: conditions,
    ...(description === undefined ? {} : { description: description as string }),
  };
}

function checkCondition(raw: unknown, path: string, p: Problems): EngagementCondition | undefined {
  if (!isObject(raw)) {
    p.add(path, 'must be an object with property, op and value');
    return undefined;
  }
  const start = p.list.length;
  p.fields(raw, path, ['property', 'op', 'value']);
  const { property, op, value } = raw;
  if (typeof property !== 'string' || chars(property) > L.maxPathLength || !PATH_RE.test(property)) {
    p.add(
      `${path}.property`,
      `must be a path of at most ${L.maxPathLength} characters into the event's properties: 1 to ${L.maxPathSegments} keys of 1 to ${L.maxPathSegmentLength} characters separated by dots, e.g. "plan" or "cart.total"`,
    );
  }
  switch (op) {
    case 'eq':
    case 'neq':
      if (!isScalar(value)) p.add(`${path}.value`, `must be ${SCALAR}`);
      break;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      if (typeof value !== 'number' || !Number.isFinite(value)) p.add(`${path}.value`, `must be a number for ${op}`);
      break;
    case 'in':
      if (!Array.isArray(value) || value.length === 0 || value.length > L.maxInValues) {
        p.add(`${path}.value`, `must be an array of 1 to ${L.maxInValues} values for in`);
      } else {
        value.forEach((v, k) => {
          if (!isScalar(v)) p.add(`${path}.value[${k}]`, `must be ${SCALAR}`);
        });
      }
      break;
    case 'exists':
      if (value !== undefined && typeof value !== 'boolean') p.add(`${path}.value`, 'must be true or false for exists (default true)');
      break;
    default:
      p.add(`${path}.op`, `must be one of ${ENGAGEMENT_OPERATORS.join(', ')}`);
  }
  if (p.list.length > start) return undefined;
  if (op === 'exists') return { property: property as string, op, value: (value as boolean | undefined) ?? true };
  return { property, op, value } as EngagementCondition;
}
