import { describe, expect, it } from '@jest/globals';
import { checkEngagementRules, type EngagementCondition } from '@svc/contracts';
import {
  DEFAULT_COMPILED_RULES,
  combineEngagement,
  compileEngagementRules,
  conditionHolds,
  decayScore,
  eventPoints,
  propertyAt,
  scoringTime,
} from './engagement';

const compile = (doc: unknown) => {
  const check = checkEngagementRules(doc);
  if (!check.ok) throw new Error(JSON.stringify(check.problems));
  return compileEngagementRules(check.rules);
};

describe('conditions', () => {
  const props = {
    plan: 'pro',
    seats: 5,
    price: '49.50',
    annual: true,
    coupon: null,
    tags: ['a', 'b'],
    cart: { total: 120, currency: 'USD', items: [{ sku: 'x' }], meta: { source: 'ads' } },
    'dotted.key': 'unreachable',
    zero: 0,
    empty: '',
  };
  const cases: Array<[string, EngagementCondition, boolean]> = [
    ['eq string', { property: 'plan', op: 'eq', value: 'pro' }, true],
    ['eq is case-sensitive', { property: 'plan', op: 'eq', value: 'Pro' }, false],
    ['eq number', { property: 'seats', op: 'eq', value: 5 }, true],
    ['eq does not convert "5" and 5', { property: 'seats', op: 'eq', value: '5' }, false],
    ['eq boolean', { property: 'annual', op: 'eq', value: true }, true],
    ['eq missing', { property: 'nope', op: 'eq', value: 'pro' }, false],
    ['eq on an object', { property: 'cart', op: 'eq', value: 'x' }, false],
    ['eq empty string', { property: 'empty', op: 'eq', value: '' }, true],
    ['neq different', { property: 'plan', op: 'neq', value: 'free' }, true],
    ['neq same', { property: 'plan', op: 'neq', value: 'pro' }, false],
    ['neq missing matches', { property: 'nope', op: 'neq', value: 'pro' }, true],
    ['gt number', { property: 'seats', op: 'gt', value: 4 }, true],
    ['gt equal', { property: 'seats', op: 'gt', value: 5 }, false],
    ['gte equal', { property: 'seats', op: 'gte', value: 5 }, true],
    ['lt', { property: 'seats', op: 'lt', value: 6 }, true],
    ['lt equal', { property: 'seats', op: 'lt', value: 5 }, false],
    ['lte equal', { property: 'seats', op: 'lte', value: 5 }, true],
    ['lte zero', { property: 'zero', op: 'lte', value: 0 }, true],
    ['gte decimal string', { property: 'price', op: 'gte', value: 49.5 }, true],
    ['lt decimal string', { property: 'price', op: 'lt', value: 49.5 }, false],
    ['gt on a word', { property: 'plan', op: 'gt', value: 0 }, false],
    ['gt on a boolean', { property: 'annual', op: 'gt', value: 0 }, false],
    ['lt on null', { property: 'coupon', op: 'lt', value: 1 }, false],
    ['lt on missing', { property: 'nope', op: 'lt', value: 1 }, false],
    ['lt on an empty string', { property: 'empty', op: 'lt', value: 1 }, false],
    ['in hit', { property: 'plan', op: 'in', value: ['free', 'pro'] }, true],
    ['in miss', { property: 'plan', op: 'in', value: ['free', 'team'] }, false],
    ['in is typed', { property: 'seats', op: 'in', value: ['5', 6] }, false],
    ['in missing', { property: 'nope', op: 'in', value: ['pro'] }, false],
    ['exists', { property: 'plan', op: 'exists', value: true }, true],
    ['exists on null', { property: 'coupon', op: 'exists', value: true }, false],
    ['exists on missing', { property: 'nope', op: 'exists', value: true }, false],
    ['exists on zero and empty', { property: 'zero', op: 'exists' }, true],
    ['not exists on null', { property: 'coupon', op: 'exists', value: false }, true],
    ['not exists on missing', { property: 'nope', op: 'exists', value: false }, true],
    ['not exists on present', { property: 'plan', op: 'exists', value: false }, false],
    ['dotted path', { property: 'cart.total', op: 'gte', value: 100 }, true],
    ['deeper dotted path', { property: 'cart.meta.source', op: 'eq', value: 'ads' }, true],
    ['dotted path through a scalar', { property: 'plan.length', op: 'exists' }, false],
    ['arrays are not walked', { property: 'cart.items.0.sku', op: 'exists' }, false],
    ['an array value is never eq', { property: 'tags', op: 'eq', value: 'a' }, false],
    ['a key with a dot is not addressable', { property: 'dotted.key', op: 'exists' }, false],
    ['inherited keys are not properties', { property: 'constructor', op: 'exists' }, false],
    ['nor through __proto__', { property: '__proto__.toString', op: 'exists' }, false],
  ];
  it.each(cases)('%s', (_name, condition, expected) => {
    expect(conditionHolds(condition, props)).toBe(expected);
  });

  it('propertyAt walks own keys of objects only', () => {
    expect(propertyAt(props, 'cart.currency')).toBe('USD');
    expect(propertyAt(props, 'cart.items')).toEqual([{ sku: 'x' }]);
    expect(propertyAt(props, 'cart.items.0')).toBeUndefined();
    expect(propertyAt({}, 'a')).toBeUndefined();
  });
});

describe('eventPoints', () => {
  const rules = compile({
    version: 1,
    rules: [
      { event: 'purchase', points: 10 },
      { event: 'purchase', points: 5, where: [{ property: 'plan', op: 'eq', value: 'pro' }] },
      { event: 'purchase', points: 20, where: [{ property: 'value', op: 'gte', value: 100 }, { property: 'currency', op: 'in', value: ['USD', 'EUR'] }] },
      { event: 'unsubscribe', points: -7.5 },
      { event: '$pageview', points: 1, where: [{ property: 'path', op: 'eq', value: '/pricing' }] },
    ],
  });
  const cases: Array<[string, string, Record<string, unknown>, number]> = [
    ['one unconditional rule', 'purchase', {}, 10],
    ['two rules add up', 'purchase', { plan: 'pro' }, 15],
    ['three rules add up', 'purchase', { plan: 'pro', value: 150, currency: 'EUR' }, 35],
    ['every condition of a rule must hold', 'purchase', { value: 150, currency: 'INR' }, 10],
    ['negative points', 'unsubscribe', { plan: 'pro' }, -7.5],
    ['page events by their stored name', '$pageview', { path: '/pricing' }, 1],
    ['conditions unmet', '$pageview', { path: '/' }, 0],
    ['no rule for the event', 'signup', { plan: 'pro' }, 0],
    ['names match exactly', 'Purchase', {}, 0],
    ['no $ variant implied', '$purchase', {}, 0],
  ];
  it.each(cases)('%s', (_name, event, properties, points) => {
    expect(eventPoints(rules, event, properties)).toBe(points);
  });

  it('the default rule set scores nothing and never decays', () => {
    expect(eventPoints(DEFAULT_COMPILED_RULES, 'purchase', { value: 100 })).toBe(0);
    expect(DEFAULT_COMPILED_RULES.halfLifeDays).toBeNull();
    expect(compile({ version: 1, rules: [], decay: { half_life_days: 7 } }).halfLifeDays).toBe(7);
  });
});

describe('decay', () => {
  const DAY = 86_400_000;
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  const iso = (ms: number) => new Date(ms).toISOString();

  const cases: Array<[string, number, number | null, number, number | null, number]> = [
    ['one half-life halves', 10, t0, t0 + 30 * DAY, 30, 5],
    ['two half-lives quarter', 10, t0, t0 + 60 * DAY, 30, 2.5],
    ['half a half-life', 10, t0, t0 + 15 * DAY, 30, 10 / Math.SQRT2],
    ['negative scores decay towards 0', -8, t0, t0 + 7 * DAY, 7, -4],
    ['no decay configured', 10, t0, t0 + 300 * DAY, null, 10],
    ['never scored', 10, null, t0, 30, 10],
    ['not later', 10, t0, t0 - DAY, 30, 10],
    ['same instant', 10, t0, t0, 30, 10],
    ['past 60 half-lives is 0', 1e6, t0, t0 + 61 * DAY, 1, 0],
    ['below 1e-9 is 0', 1e-6, t0, t0 + 20 * DAY, 1, 0],
    ['fractional half-life', 4, t0, t0 + DAY, 0.5, 1],
  ];
  it.each(cases)('%s', (_name, score, since, until, halfLife, expected) => {
    expect(decayScore(score, since, until, halfLife)).toBeCloseTo(expected, 12);
  });

  it('combining is order-independent: the sum of each event decayed to the latest one', () => {
    const h = 10;
    const events = [
      { score: 10, at: iso(t0) },
      { score: 4, at: iso(t0 + 25 * DAY) },
      { score: -3, at: iso(t0 + 5 * DAY) },
      { score: 8, at: iso(t0 + 20 * DAY) },
    ];
    const expected = 10 * 2 ** -2.5 + 4 + -3 * 2 ** -2 + 8 * 2 ** -0.5;
    const fold = (list: typeof events) => list.reduce((s, e) => combineEngagement(s, e, h), { score: 0, at: null as string | null });
    for (const order of [events, [...events].reverse(), [events[2]!, events[0]!, events[3]!, events[1]!]]) {
      const state = fold(order);
      expect(state.at).toBe(iso(t0 + 25 * DAY));
      expect(state.score).toBeCloseTo(expected, 12);
    }
    // Two profiles' states merge to the same as all their events on one.
    const merged = combineEngagement(fold(events.slice(0, 2)), fold(events.slice(2)), h);
    expect(merged.score).toBeCloseTo(expected, 12);
    expect(merged.at).toBe(iso(t0 + 25 * DAY));
  });

  it('without decay, combining adds; a state never scored keeps its instant null', () => {
    expect(combineEngagement({ score: 3, at: iso(t0) }, { score: 4, at: iso(t0 + DAY) }, null)).toEqual({ score: 7, at: iso(t0 + DAY) });
    expect(combineEngagement({ score: 2.5, at: null }, { score: 0, at: null }, 30)).toEqual({ score: 2.5, at: null });
    expect(combineEngagement({ score: 2.5, at: null }, { score: 1, at: iso(t0) }, 30)).toEqual({ score: 3.5, at: iso(t0) });
  });

  it('an event scores at its timestamp, but never later than its arrival', () => {
    expect(scoringTime('2026-01-01T10:00:00.000Z', '2026-01-01T10:00:05.000Z')).toBe('2026-01-01T10:00:00.000Z');
    expect(scoringTime('2026-01-01T10:04:00.000Z', '2026-01-01T10:00:05.000Z')).toBe('2026-01-01T10:00:05.000Z');
  });
});
