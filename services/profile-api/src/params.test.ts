import { describe, expect, it } from '@jest/globals';
import { Messages } from '@svc/contracts';
import { HttpError } from '@svc/runtime';
import { ProfileMessages } from './messages';
import { parseEventsParams, parseListParams, parseSearchParams, type Query } from './params';
import { checkMergeBody } from './routes';
import { escapeLike } from './store';

/** The 400 message a parser throws for `query`, or the value it returns. */
function outcome<T>(parse: (q: Query) => T, query: Query): { error: string; status: number } | { value: T } {
  try {
    return { value: parse(query) };
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    return { error: err.message, status: err.status };
  }
}

describe('list parameters', () => {
  it('defaults: limit 50, offset 0, no identified filter, last_seen_at desc', () => {
    expect(parseListParams({})).toEqual({ limit: 50, offset: 0, identified: undefined, sortBy: 'last_seen_at', sortOrder: 'desc' });
  });

  const valid: Array<[string, Query, Partial<ReturnType<typeof parseListParams>>]> = [
    ['limit 1', { limit: '1' }, { limit: 1 }],
    ['limit 100', { limit: '100' }, { limit: 100 }],
    ['limit 101 clamps to 100', { limit: '101' }, { limit: 100 }],
    ['a huge limit clamps to 100', { limit: '99999999999999999999999' }, { limit: 100 }],
    ['leading zeros', { limit: '007' }, { limit: 7 }],
    ['offset 0', { offset: '0' }, { offset: 0 }],
    ['offset 12345', { offset: '12345' }, { offset: 12_345 }],
    ['identified=true', { identified: 'true' }, { identified: true }],
    ['identified=false', { identified: 'false' }, { identified: false }],
    ...(['last_seen_at', 'first_seen_at', 'event_count', 'session_count', 'engagement_score', 'created_at'] as const).map(
      (f): [string, Query, Partial<ReturnType<typeof parseListParams>>] => [`sort_by=${f}`, { sort_by: f }, { sortBy: f }],
    ),
    ['sort_order=asc', { sort_order: 'asc' }, { sortOrder: 'asc' }],
    ['sort_order=desc', { sort_order: 'desc' }, { sortOrder: 'desc' }],
  ];
  it.each(valid)('%s', (_name, query, expected) => {
    expect(parseListParams(query)).toMatchObject(expected);
  });

  const invalid: Array<[string, Query, string]> = [
    ['limit negative', { limit: '-1' }, ProfileMessages.invalidLimit],
    ['limit zero', { limit: '0' }, ProfileMessages.invalidLimit],
    ['limit fractional', { limit: '1.5' }, ProfileMessages.invalidLimit],
    ['limit not a number', { limit: 'ten' }, ProfileMessages.invalidLimit],
    ['limit empty', { limit: '' }, ProfileMessages.invalidLimit],
    ['limit exponent', { limit: '1e2' }, ProfileMessages.invalidLimit],
    ['limit with spaces', { limit: ' 5' }, ProfileMessages.invalidLimit],
    ['limit hex', { limit: '0x10' }, ProfileMessages.invalidLimit],
    ['limit repeated', { limit: ['1', '2'] }, ProfileMessages.repeatedParameter('limit')],
    ['offset negative', { offset: '-5' }, ProfileMessages.invalidOffset],
    ['offset fractional', { offset: '2.5' }, ProfileMessages.invalidOffset],
    ['offset not a number', { offset: 'abc' }, ProfileMessages.invalidOffset],
    ['offset empty', { offset: '' }, ProfileMessages.invalidOffset],
    ['offset beyond 2^53', { offset: '9007199254740993' }, ProfileMessages.invalidOffset],
    ['offset repeated', { offset: ['0', '1'] }, ProfileMessages.repeatedParameter('offset')],
    ['identified=yes', { identified: 'yes' }, ProfileMessages.invalidIdentified],
    ['identified=1', { identified: '1' }, ProfileMessages.invalidIdentified],
    ['identified=TRUE', { identified: 'TRUE' }, ProfileMessages.invalidIdentified],
    ['sort_by unknown', { sort_by: 'name' }, ProfileMessages.invalidSortBy],
    ['sort_by injection', { sort_by: 'id; drop table x' }, ProfileMessages.invalidSortBy],
    ['sort_by wrong case', { sort_by: 'Last_Seen_At' }, ProfileMessages.invalidSortBy],
    ['sort_order unknown', { sort_order: 'up' }, ProfileMessages.invalidSortOrder],
    ['sort_order upper case', { sort_order: 'DESC' }, ProfileMessages.invalidSortOrder],
  ];
  it.each(invalid)('%s → 400 %s', (_name, query, message) => {
    expect(outcome(parseListParams, query)).toEqual({ status: 400, error: message });
  });

  it('names every sort field in its sort_by message', () => {
    expect(ProfileMessages.invalidSortBy).toBe(
      'Invalid sort_by: expected one of last_seen_at, first_seen_at, event_count, session_count, engagement_score, created_at',
    );
  });
});

describe('events parameters', () => {
  it('defaults: limit 50, offset 0, no cursor, no filter, estimated total on the cursor path', () => {
    expect(parseEventsParams({})).toEqual({ limit: 50, offset: 0, cursor: undefined, eventName: undefined, preciseTotal: false });
  });

  const valid: Array<[string, Query, Partial<ReturnType<typeof parseEventsParams>>]> = [
    ['limit 200', { limit: '200' }, { limit: 200 }],
    ['limit 201 clamps to 200', { limit: '201' }, { limit: 200 }],
    ['limit 10000 clamps to 200', { limit: '10000' }, { limit: 200 }],
    ['offset 40', { offset: '40' }, { offset: 40 }],
    ['cursor kept verbatim', { cursor: 'abc.def' }, { cursor: 'abc.def' }],
    ['event_name', { event_name: 'Order Completed' }, { eventName: 'Order Completed' }],
    ['empty event_name filters nothing', { event_name: '' }, { eventName: undefined }],
    ['event_name of 200 characters', { event_name: 'e'.repeat(200) }, { eventName: 'e'.repeat(200) }],
    ['precise_total=1', { precise_total: '1' }, { preciseTotal: true }],
    ['precise_total=true', { precise_total: 'true' }, { preciseTotal: true }],
    ['precise_total=0', { precise_total: '0' }, { preciseTotal: false }],
    ['precise_total=false', { precise_total: 'false' }, { preciseTotal: false }],
  ];
  it.each(valid)('%s', (_name, query, expected) => {
    expect(parseEventsParams(query)).toMatchObject(expected);
  });

  const invalid: Array<[string, Query, string]> = [
    ['limit negative', { limit: '-10' }, ProfileMessages.invalidLimit],
    ['limit zero', { limit: '0' }, ProfileMessages.invalidLimit],
    ['limit fractional', { limit: '0.5' }, ProfileMessages.invalidLimit],
    ['limit NaN', { limit: 'NaN' }, ProfileMessages.invalidLimit],
    ['offset negative', { offset: '-1' }, ProfileMessages.invalidOffset],
    ['offset word', { offset: 'first' }, ProfileMessages.invalidOffset],
    ['empty cursor', { cursor: '' }, Messages.invalidCursor],
    ['repeated cursor', { cursor: ['a', 'b'] }, ProfileMessages.repeatedParameter('cursor')],
    ['event_name of 201 characters', { event_name: 'e'.repeat(201) }, ProfileMessages.invalidEventName],
    ['precise_total=yes', { precise_total: 'yes' }, ProfileMessages.invalidPreciseTotal],
    ['precise_total=2', { precise_total: '2' }, ProfileMessages.invalidPreciseTotal],
  ];
  it.each(invalid)('%s → 400 %s', (_name, query, message) => {
    expect(outcome(parseEventsParams, query)).toEqual({ status: 400, error: message });
  });
});

describe('search parameters', () => {
  const valid: Array<[string, Query, ReturnType<typeof parseSearchParams>]> = [
    ['email (trimmed)', { email: ' Ann@Example.com ' }, { field: 'email', value: 'Ann@Example.com', partial: false, limit: 20 }],
    ['user_id as given', { user_id: ' u 1' }, { field: 'user_id', value: ' u 1', partial: false, limit: 20 }],
    ['anonymous_id', { anonymous_id: 'anon_1' }, { field: 'anonymous_id', value: 'anon_1', partial: false, limit: 20 }],
    ['q (trimmed)', { q: ' ann ' }, { field: 'q', value: 'ann', partial: false, limit: 20 }],
    ['query is q', { query: 'ann' }, { field: 'q', value: 'ann', partial: false, limit: 20 }],
    ['partial=true', { q: 'ann', partial: 'true' }, { field: 'q', value: 'ann', partial: true, limit: 20 }],
    ['partial=false', { q: 'ann', partial: 'false' }, { field: 'q', value: 'ann', partial: false, limit: 20 }],
    ['exact search of one character', { q: 'a' }, { field: 'q', value: 'a', partial: false, limit: 20 }],
    ['partial of three characters, counted as characters', { user_id: 'é😀x', partial: 'true' }, { field: 'user_id', value: 'é😀x', partial: true, limit: 20 }],
    ['limit 50', { q: 'ann', limit: '50' }, { field: 'q', value: 'ann', partial: false, limit: 50 }],
    ['limit 51 clamps to 50', { q: 'ann', limit: '51' }, { field: 'q', value: 'ann', partial: false, limit: 50 }],
    ['q of 200 characters', { q: 'q'.repeat(200) }, { field: 'q', value: 'q'.repeat(200), partial: false, limit: 20 }],
    ['an empty parameter next to a real one', { email: '', user_id: 'u1' }, { field: 'user_id', value: 'u1', partial: false, limit: 20 }],
  ];
  it.each(valid)('%s', (_name, query, expected) => {
    expect(parseSearchParams(query)).toEqual(expected);
  });

  const invalid: Array<[string, Query, string]> = [
    ['nothing', {}, Messages.searchParameterRequired],
    ['only partial and limit', { partial: 'true', limit: '5' }, Messages.searchParameterRequired],
    ['empty q', { q: '' }, Messages.searchParameterRequired],
    ['blank email', { email: '   ' }, Messages.searchParameterRequired],
    ['two parameters', { email: 'a@b.co', user_id: 'u1' }, ProfileMessages.searchParameterConflict],
    ['q and query', { q: 'a', query: 'b' }, ProfileMessages.searchParameterConflict],
    ['q of 201 characters', { q: 'q'.repeat(201) }, ProfileMessages.searchTooLong],
    ['query of 201 characters', { query: 'q'.repeat(201) }, ProfileMessages.searchTooLong],
    ['user_id of 201 characters', { user_id: 'u'.repeat(201) }, ProfileMessages.searchTooLong],
    ['partial=yes', { q: 'a', partial: 'yes' }, ProfileMessages.invalidPartial],
    ['partial of one character', { q: 'a', partial: 'true' }, ProfileMessages.partialSearchTooShort],
    ['partial of two characters', { email: 'ab', partial: 'true' }, ProfileMessages.partialSearchTooShort],
    ['partial of two characters after trimming', { q: ' ab ', partial: 'true' }, ProfileMessages.partialSearchTooShort],
    ['limit zero', { q: 'a', limit: '0' }, ProfileMessages.invalidLimit],
    ['limit negative', { q: 'a', limit: '-3' }, ProfileMessages.invalidLimit],
    ['limit word', { q: 'a', limit: 'many' }, ProfileMessages.invalidLimit],
    ['repeated email', { email: ['a@b.co', 'c@d.co'] }, ProfileMessages.repeatedParameter('email')],
  ];
  it.each(invalid)('%s → 400 %s', (_name, query, message) => {
    expect(outcome(parseSearchParams, query)).toEqual({ status: 400, error: message });
  });

  it('the partial-search floor says how many characters it needs', () => {
    expect(ProfileMessages.partialSearchTooShort).toBe('Partial search needs at least 3 characters');
  });

  it('the missing-parameter message is the spec string', () => {
    expect(Messages.searchParameterRequired).toBe('Search parameter required: q, email, user_id, or anonymous_id');
  });
});

describe('merge body', () => {
  const ok = { source_profile_id: 'a', target_profile_id: 'b' };
  const valid: Array<[string, unknown, ReturnType<typeof checkMergeBody>]> = [
    ['ids only', ok, { source: 'a', target: 'b', reason: null }],
    ['with a reason', { ...ok, reason: 'duplicate signup' }, { source: 'a', target: 'b', reason: 'duplicate signup' }],
    ['null reason', { ...ok, reason: null }, { source: 'a', target: 'b', reason: null }],
    ['empty reason', { ...ok, reason: '' }, { source: 'a', target: 'b', reason: null }],
    ['reason of 1000 characters', { ...ok, reason: 'r'.repeat(1000) }, { source: 'a', target: 'b', reason: 'r'.repeat(1000) }],
    ['extra fields ignored', { ...ok, extra: 1 }, { source: 'a', target: 'b', reason: null }],
  ];
  it.each(valid)('%s', (_name, body, expected) => {
    expect(checkMergeBody(body)).toEqual(expected);
  });

  const invalid: Array<[string, unknown, string]> = [
    ['an array', [ok], ProfileMessages.mergeBodyNotObject],
    ['a string', 'merge', ProfileMessages.mergeBodyNotObject],
    ['null', null, ProfileMessages.mergeBodyNotObject],
    ['no source', { target_profile_id: 'b' }, ProfileMessages.mergeFieldRequired('source_profile_id')],
    ['null source', { source_profile_id: null, target_profile_id: 'b' }, ProfileMessages.mergeFieldRequired('source_profile_id')],
    ['no target', { source_profile_id: 'a' }, ProfileMessages.mergeFieldRequired('target_profile_id')],
    ['neither', {}, ProfileMessages.mergeFieldRequired('source_profile_id')],
    ['numeric source', { source_profile_id: 42, target_profile_id: 'b' }, ProfileMessages.mergeFieldInvalid('source_profile_id')],
    ['empty target', { source_profile_id: 'a', target_profile_id: '' }, ProfileMessages.mergeFieldInvalid('target_profile_id')],
    ['object target', { source_profile_id: 'a', target_profile_id: { id: 'b' } }, ProfileMessages.mergeFieldInvalid('target_profile_id')],
    ['source of 201 characters', { source_profile_id: 'a'.repeat(201), target_profile_id: 'b' }, ProfileMessages.mergeFieldInvalid('source_profile_id')],
    ['numeric reason', { ...ok, reason: 7 }, ProfileMessages.mergeReasonInvalid],
    ['reason of 1001 characters', { ...ok, reason: 'r'.repeat(1001) }, ProfileMessages.mergeReasonInvalid],
  ];
  it.each(invalid)('%s → 400 %s', (_name, body, message) => {
    expect(outcome(() => checkMergeBody(body), {})).toEqual({ status: 400, error: message });
  });

  it('spells its messages out', () => {
    expect(ProfileMessages.mergeFieldRequired('source_profile_id')).toBe('Invalid request: source_profile_id is required');
    expect(ProfileMessages.mergeFieldInvalid('target_profile_id')).toBe('Invalid request: target_profile_id must be a string of 1 to 200 characters');
    expect(ProfileMessages.mergeIntoItself).toBe('Cannot merge a profile into itself');
  });
});

describe('LIKE escaping', () => {
  it.each([
    ['plain', 'plain'],
    ['50%', '50\\%'],
    ['a_b', 'a\\_b'],
    ['back\\slash', 'back\\\\slash'],
    ['%_\\', '\\%\\_\\\\'],
  ])('%s → %s', (input, escaped) => {
    expect(escapeLike(input)).toBe(escaped);
  });
});
