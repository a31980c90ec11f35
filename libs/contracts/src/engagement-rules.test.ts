import { describe, expect, it } from '@jest/globals';
import { formatProblem } from './document-problems';
import { DEFAULT_ENGAGEMENT_RULES, EngagementRulesSchema, checkEngagementRules } from './engagement-rules';
import { validatorFor } from './schema-validator';

const schemaAccepts = (doc: unknown) => validatorFor(EngagementRulesSchema)(doc);
const rule = (extra: Record<string, unknown> = {}) => ({ event: 'purchase', points: 10, ...extra });
const doc = (...rules: unknown[]) => ({ version: 1, rules });
const where = (...conditions: unknown[]) => doc(rule({ where: conditions }));

describe('checkEngagementRules', () => {
  const PATH_MESSAGE =
    'must be a path of at most 200 characters into the event\'s properties: 1 to 10 keys of 1 to 100 characters separated by dots, e.g. "plan" or "cart.total"';
  const SCALAR = 'must be a string (at most 1000 characters), a number or a boolean';

  const bad: Array<[string, unknown, string[]]> = [
    ['not an object', [rule()], ['$: must be a JSON object with version, rules and optionally decay']],
    ['null', null, ['$: must be a JSON object with version, rules and optionally decay']],
    ['no version', { rules: [] }, ['$.version: must be 1']],
    ['version 2', { version: 2, rules: [] }, ['$.version: must be 1']],
    ['version as a string', { version: '1', rules: [] }, ['$.version: must be 1']],
    ['unknown top-level field', { version: 1, rules: [], rule: [] }, ['$.rule: unknown field (allowed: version, rules, decay)']],
    ['no rules', { version: 1 }, ['$.rules: must be an array of at most 200 rules']],
    ['rules as an object', { version: 1, rules: { purchase: 10 } }, ['$.rules: must be an array of at most 200 rules']],
    ['201 rules', doc(...Array.from({ length: 201 }, () => rule())), ['$.rules: must hold at most 200 rules (got 201)']],
    ['a rule that is not an object', doc('purchase'), ['$.rules[0]: must be an object with event, points and optionally where and description']],
    ['unknown rule field', doc(rule({ name: 'x' })), ['$.rules[0].name: unknown field (allowed: event, points, where, description)']],
    ['no event', doc({ points: 1 }), ['$.rules[0].event: must be an event name of 1 to 200 characters, as stored ($pageview for page events)']],
    ['empty event', doc(rule({ event: '' })), ['$.rules[0].event: must be an event name of 1 to 200 characters, as stored ($pageview for page events)']],
    ['event of 201 characters', doc(rule({ event: 'é'.repeat(201) })), ['$.rules[0].event: must be an event name of 1 to 200 characters, as stored ($pageview for page events)']],
    ['no points', doc({ event: 'x' }), ['$.rules[0].points: must be a number from -1000 to 1000']],
    ['points as a string', doc(rule({ points: '10' })), ['$.rules[0].points: must be a number from -1000 to 1000']],
    ['points over 1000', doc(rule({ points: 1000.5 })), ['$.rules[0].points: must be a number from -1000 to 1000']],
    ['points under -1000', doc(rule({ points: -1001 })), ['$.rules[0].points: must be a number from -1000 to 1000']],
    ['long description', doc(rule({ description: 'd'.repeat(501) })), ['$.rules[0].description: must be a string of at most 500 characters']],
    ['where as an object', doc(rule({ where: { plan: 'pro' } })), ['$.rules[0].where: must be an array of at most 20 conditions']],
    ['21 conditions', where(...Array.from({ length: 21 }, () => ({ property: 'a', op: 'exists' }))), ['$.rules[0].where: must hold at most 20 conditions (got 21)']],
    ['a condition that is not an object', where('plan=pro'), ['$.rules[0].where[0]: must be an object with property, op and value']],
    ['unknown condition field', where({ property: 'plan', op: 'eq', value: 'pro', case: 'insensitive' }), ['$.rules[0].where[0].case: unknown field (allowed: property, op, value)']],
    ['no property', where({ op: 'exists' }), [`$.rules[0].where[0].property: ${PATH_MESSAGE}`]],
    ['empty path segment', where({ property: 'cart..total', op: 'exists' }), [`$.rules[0].where[0].property: ${PATH_MESSAGE}`]],
    ['leading dot', where({ property: '.plan', op: 'exists' }), [`$.rules[0].where[0].property: ${PATH_MESSAGE}`]],
    ['11 path segments', where({ property: Array.from({ length: 11 }, () => 'a').join('.'), op: 'exists' }), [`$.rules[0].where[0].property: ${PATH_MESSAGE}`]],
    ['path segment of 101 characters', where({ property: 'a'.repeat(101), op: 'exists' }), [`$.rules[0].where[0].property: ${PATH_MESSAGE}`]],
    ['path of 201 characters', where({ property: `${'a'.repeat(100)}.${'b'.repeat(100)}`, op: 'exists' }), [`$.rules[0].where[0].property: ${PATH_MESSAGE}`]],
    ['no op', where({ property: 'plan', value: 'pro' }), ['$.rules[0].where[0].op: must be one of eq, neq, gt, gte, lt, lte, in, exists']],
    ['unknown op', where({ property: 'plan', op: 'contains', value: 'pro' }), ['$.rules[0].where[0].op: must be one of eq, neq, gt, gte, lt, lte, in, exists']],
    ['op in upper case', where({ property: 'plan', op: 'EQ', value: 'pro' }), ['$.rules[0].where[0].op: must be one of eq, neq, gt, gte, lt, lte, in, exists']],
    ['eq without a value', where({ property: 'plan', op: 'eq' }), [`$.rules[0].where[0].value: ${SCALAR}`]],
    ['eq null', where({ property: 'plan', op: 'eq', value: null }), [`$.rules[0].where[0].value: ${SCALAR}`]],
    ['neq an object', where({ property: 'plan', op: 'neq', value: { a: 1 } }), [`$.rules[0].where[0].value: ${SCALAR}`]],
    ['eq a string of 1001 characters', where({ property: 'plan', op: 'eq', value: 'p'.repeat(1001) }), [`$.rules[0].where[0].value: ${SCALAR}`]],
    ['gt a numeric string', where({ property: 'value', op: 'gt', value: '10' }), ['$.rules[0].where[0].value: must be a number for gt']],
    ['lte without a value', where({ property: 'value', op: 'lte' }), ['$.rules[0].where[0].value: must be a number for lte']],
    ['in a scalar', where({ property: 'plan', op: 'in', value: 'pro' }), ['$.rules[0].where[0].value: must be an array of 1 to 100 values for in']],
    ['in an empty list', where({ property: 'plan', op: 'in', value: [] }), ['$.rules[0].where[0].value: must be an array of 1 to 100 values for in']],
    ['in 101 values', where({ property: 'plan', op: 'in', value: Array.from({ length: 101 }, (_, i) => i) }), ['$.rules[0].where[0].value: must be an array of 1 to 100 values for in']],
    ['in with a null', where({ property: 'plan', op: 'in', value: ['pro', null] }), [`$.rules[0].where[0].value[1]: ${SCALAR}`]],
    ['exists "yes"', where({ property: 'plan', op: 'exists', value: 'yes' }), ['$.rules[0].where[0].value: must be true or false for exists (default true)']],
    ['decay as a number', { ...doc(), decay: 30 }, ['$.decay: must be an object {"half_life_days": <days>} or null']],
    ['decay without a half-life', { ...doc(), decay: {} }, ['$.decay.half_life_days: must be a number of days greater than 0 and at most 3650']],
    ['half-life zero', { ...doc(), decay: { half_life_days: 0 } }, ['$.decay.half_life_days: must be a number of days greater than 0 and at most 3650']],
    ['negative half-life', { ...doc(), decay: { half_life_days: -7 } }, ['$.decay.half_life_days: must be a number of days greater than 0 and at most 3650']],
    ['half-life over ten years', { ...doc(), decay: { half_life_days: 3651 } }, ['$.decay.half_life_days: must be a number of days greater than 0 and at most 3650']],
    ['half-life as a string', { ...doc(), decay: { half_life_days: '30' } }, ['$.decay.half_life_days: must be a number of days greater than 0 and at most 3650']],
    ['decay in hours', { ...doc(), decay: { half_life_days: 1, half_life_hours: 2 } }, ['$.decay.half_life_hours: unknown field (allowed: half_life_days)']],
  ];

  it.each(bad)('%s', (_name, input, problems) => {
    const check = checkEngagementRules(input);
    expect(check.ok).toBe(false);
    expect(check.ok ? [] : check.problems.map(formatProblem)).toEqual(problems);
    expect(schemaAccepts(input)).toBe(false);
  });

  it('lists every problem of a document, in document order, with its path', () => {
    const input = {
      version: 2,
      rules: [
        { event: 'signup', points: 5 },
        { event: '', points: 2000, where: [{ property: 'plan', op: 'eq', value: 'pro' }, { property: 'a..b', op: 'between', value: [1, 2] }] },
        { event: 'x', points: 1, where: [{ property: 'tags', op: 'in', value: ['a', {}, 'c', []] }] },
      ],
      decay: { half_life_days: 0 },
      extra: true,
    };
    const check = checkEngagementRules(input);
    expect(check.ok ? [] : check.problems.map(formatProblem)).toEqual([
      '$.extra: unknown field (allowed: version, rules, decay)',
      '$.version: must be 1',
      '$.rules[1].event: must be an event name of 1 to 200 characters, as stored ($pageview for page events)',
      '$.rules[1].points: must be a number from -1000 to 1000',
      `$.rules[1].where[1].property: ${PATH_MESSAGE}`,
      '$.rules[1].where[1].op: must be one of eq, neq, gt, gte, lt, lte, in, exists',
      `$.rules[2].where[0].value[1]: ${SCALAR}`,
      `$.rules[2].where[0].value[3]: ${SCALAR}`,
      '$.decay.half_life_days: must be a number of days greater than 0 and at most 3650',
    ]);
  });

  it('accepts the boundaries and normalises the document', () => {
    const input = {
      version: 1,
      rules: [
        { event: '$pageview', points: 1, where: [{ property: 'path', op: 'eq', value: '/pricing' }] },
        { event: 'purchase', points: 1000, description: 'big spenders', where: [{ property: 'cart.total', op: 'gte', value: 100 }, { property: 'coupon', op: 'exists', value: false }] },
        { event: 'unsubscribe', points: -1000 },
        { event: 'é'.repeat(200), points: 0.5, where: [{ property: 'plan', op: 'in', value: ['pro', 2, true] }, { property: 'trial', op: 'exists' }] },
        ...Array.from({ length: 196 }, () => rule()),
      ],
      decay: { half_life_days: 3650 },
    };
    const check = checkEngagementRules(input);
    expect(check.ok).toBe(true);
    expect(schemaAccepts(input)).toBe(true);
    if (!check.ok) return;
    expect(check.rules.rules).toHaveLength(200);
    expect(check.rules.rules[2]).toEqual({ event: 'unsubscribe', points: -1000, where: [] });
    expect(check.rules.rules[1]).toMatchObject({ description: 'big spenders' });
    // exists gets its default value written out.
    expect(check.rules.rules[3]!.where).toEqual([
      { property: 'plan', op: 'in', value: ['pro', 2, true] },
      { property: 'trial', op: 'exists', value: true },
    ]);
    expect(check.rules.decay).toEqual({ half_life_days: 3650 });
    expect(schemaAccepts(check.rules)).toBe(true);
  });

  it('decay is optional, and null means none', () => {
    expect(checkEngagementRules({ version: 1, rules: [] })).toEqual({ ok: true, rules: DEFAULT_ENGAGEMENT_RULES });
    expect(checkEngagementRules({ version: 1, rules: [], decay: null })).toEqual({ ok: true, rules: DEFAULT_ENGAGEMENT_RULES });
    expect(checkEngagementRules({ version: 1, rules: [], decay: { half_life_days: 0.5 } })).toEqual({ ok: true, rules: { version: 1, rules: [], decay: { half_life_days: 0.5 } } });
    expect(schemaAccepts(DEFAULT_ENGAGEMENT_RULES)).toBe(true);
  });
});
