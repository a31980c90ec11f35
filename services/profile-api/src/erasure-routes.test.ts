import { describe, expect, it } from '@jest/globals';
import { Messages } from '@svc/contracts';
import { HttpError } from '@svc/runtime';
import { checkIdentifierBody, checkReason } from './erasure-routes';

/** The status and message a body gets, or the parsed body. */
function outcome(run: () => unknown): unknown {
  try {
    return run();
  } catch (err) {
    if (err instanceof HttpError) return [err.status, err.message];
    throw err;
  }
}

describe('POST /v1-profiles/erase bodies', () => {
  it.each([
    ['an array', [], [400, Messages.erasureBodyNotObject]],
    ['null', null, [400, Messages.erasureBodyNotObject]],
    ['a string', 'ann@example.com', [400, Messages.erasureBodyNotObject]],
    ['no identifier', {}, [400, Messages.erasureIdentifierRequired]],
    ['only a reason', { reason: 'DSR' }, [400, Messages.erasureIdentifierRequired]],
    ['two identifiers', { email: 'ann@example.com', user_id: 'u-1' }, [400, Messages.erasureIdentifierRequired]],
    ['an email that is not one', { email: 'ann' }, [400, Messages.erasureIdentifierInvalid('email')]],
    ['a phone that is not one', { phone: 'call me' }, [400, Messages.erasureIdentifierInvalid('phone')]],
    ['a numeric user_id', { user_id: 42 }, [400, Messages.erasureIdentifierInvalid('user_id')]],
    ['an empty anonymous_id', { anonymous_id: '' }, [400, Messages.erasureIdentifierInvalid('anonymous_id')]],
    ['an over-long user_id', { user_id: 'u'.repeat(201) }, [400, Messages.erasureIdentifierInvalid('user_id')]],
    ['a user_id holding U+0000', { user_id: 'u\u0000' }, [400, Messages.erasureIdentifierInvalid('user_id')]],
    ['a numeric reason', { email: 'ann@example.com', reason: 5 }, [400, Messages.erasureReasonInvalid]],
    ['an over-long reason', { email: 'ann@example.com', reason: 'r'.repeat(1001) }, [400, Messages.erasureReasonInvalid]],
    ['an email and a null phone', { email: 'Ann@Example.com', phone: null }, { target: { kind: 'email', value: 'Ann@Example.com' }, reason: null }],
    ['a phone and a reason', { phone: '098765 43210', reason: 'DSR #1' }, { target: { kind: 'phone', value: '098765 43210' }, reason: 'DSR #1' }],
    ['an anonymous_id', { anonymous_id: 'anon-1' }, { target: { kind: 'anonymous_id', value: 'anon-1' }, reason: null }],
  ])('%s → %j', (_name, body, expected) => {
    expect(outcome(() => checkIdentifierBody(body))).toEqual(expected);
  });

  it.each([
    [{}, null],
    [{ reason: null }, null],
    [{ reason: '' }, null],
    [{ reason: 'x\u0000y' }, 'xy'],
    [{ reason: ['DSR'] }, [400, Messages.erasureReasonInvalid]],
  ])('reason of %j → %j', (body, expected) => {
    expect(outcome(() => checkReason(body))).toEqual(expected);
  });
});
