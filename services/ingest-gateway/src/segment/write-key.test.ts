import { describe, expect, it } from '@jest/globals';
import { Messages } from '@svc/contracts';
import { HttpError } from '@svc/runtime';
import { writeKeyFromBody, writeKeyFromHeader } from './write-key';

const KEY = 'uk_live_' + 'k'.repeat(40);
const basic = (credentials: string) => `Basic ${Buffer.from(credentials).toString('base64')}`;

/** [case, Authorization header, the key it yields, or the 401 message]. */
const HEADERS: Array<[string, string | undefined, { key: string } | { body: true } | { error: string }]> = [
  ["Segment's libraries: the key as user, empty password", basic(`${KEY}:`), { key: KEY }],
  ['a password is ignored', basic(`${KEY}:anything`), { key: KEY }],
  ['no colon at all: the whole of it is the user', basic(KEY), { key: KEY }],
  ['Bearer, as /v1-batch takes it', `Bearer ${KEY}`, { key: KEY }],
  ['lower-case scheme', `basic ${Buffer.from(`${KEY}:`).toString('base64')}`, { key: KEY }],
  ['no header: the key must be in the body', undefined, { body: true }],
  ['a blank header: the same', '  ', { body: true }],
  ['Basic with an empty user', basic(':secret'), { error: Messages.emptyApiKey }],
  ['Basic with nothing after it', 'Basic', { error: Messages.invalidWriteKeyAuthorizationFormat }],
  ['Basic that is not base64', 'Basic %%%', { error: Messages.invalidWriteKeyAuthorizationFormat }],
  ['Basic that decodes to no UTF-8', `Basic ${Buffer.from([0xff, 0xfe, 0x3a]).toString('base64')}`, { error: Messages.invalidWriteKeyAuthorizationFormat }],
  ['Bearer with no key', 'Bearer ', { error: Messages.emptyApiKey }],
  ['another scheme', `Token ${KEY}`, { error: Messages.invalidWriteKeyAuthorizationFormat }],
];

describe('writeKeyFromHeader', () => {
  it.each(HEADERS)('%s', (_name, header, expected) => {
    if ('error' in expected) {
      let thrown: unknown;
      try {
        writeKeyFromHeader(header);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(HttpError);
      expect(thrown).toMatchObject({ status: 401, message: expected.error });
    } else {
      expect(writeKeyFromHeader(header)).toEqual('key' in expected ? { kind: 'header', key: expected.key } : { kind: 'body' });
    }
  });
});

/** [case, parsed body, the key it yields, or the 401 message]. */
const BODIES: Array<[string, unknown, { key: string } | { error: string }]> = [
  ['writeKey in the body', { writeKey: KEY, batch: [] }, { key: KEY }],
  ['no writeKey', { batch: [] }, { error: Messages.writeKeyMissing }],
  ['a body that is no object', [KEY], { error: Messages.writeKeyMissing }],
  ['an empty writeKey', { writeKey: ' ' }, { error: Messages.emptyApiKey }],
  ['a writeKey that is no string', { writeKey: 42 }, { error: Messages.invalidApiKey }],
];

describe('writeKeyFromBody', () => {
  it.each(BODIES)('%s', (_name, body, expected) => {
    if ('error' in expected) expect(() => writeKeyFromBody(body)).toThrow(expected.error);
    else expect(writeKeyFromBody(body)).toBe(expected.key);
  });
});
