import { describe, expect, it } from '@jest/globals';
import { Messages } from '@svc/contracts';
import { HttpError } from '@svc/runtime';
import { CursorCodec, type EventCursor } from './cursor';

const ORG = '0b6f3a8e-8f9c-4d0e-9a51-1c2d3e4f5a6b';
const OTHER_ORG = '1b6f3a8e-8f9c-4d0e-9a51-1c2d3e4f5a6b';
const SECRET = 'k'.repeat(32);
const position: EventCursor = { profileId: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d', micros: '1795000000123456', id: 'f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b' };

function rejects(fn: () => unknown): void {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    expect(err).toMatchObject({ status: 400, message: Messages.invalidCursor });
    return;
  }
  throw new Error('expected 400 Invalid cursor');
}

describe('events cursor', () => {
  const codec = new CursorCodec(SECRET);

  it('round-trips a position for its organisation and filter', () => {
    expect(codec.decode(codec.encode(ORG, undefined, position), ORG, undefined)).toEqual(position);
    expect(codec.decode(codec.encode(ORG, 'purchase', position), ORG, 'purchase')).toEqual(position);
  });

  it('is opaque URL-safe text', () => {
    expect(codec.encode(ORG, 'a name with spaces & symbols', position)).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  it('keeps microseconds beyond 2^53 exactly', () => {
    const far = { ...position, micros: '32503680000000001' };
    expect(codec.decode(codec.encode(ORG, undefined, far), ORG, undefined).micros).toBe('32503680000000001');
  });

  it('refuses every single-character alteration', () => {
    const good = codec.encode(ORG, undefined, position);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (let i = 0; i < good.length; i++) {
      if (good[i] === '.') continue;
      const replacement = alphabet[(alphabet.indexOf(good[i]!) + 1) % alphabet.length]!;
      rejects(() => codec.decode(good.slice(0, i) + replacement + good.slice(i + 1), ORG, undefined));
    }
  });

  it('refuses a forged payload with a copied tag', () => {
    const good = codec.encode(ORG, undefined, position);
    const [, tag] = good.split('.');
    const forged = Buffer.from(JSON.stringify({ v: 1, o: ORG, p: position.profileId, n: null, t: '1', i: position.id })).toString('base64url');
    rejects(() => codec.decode(`${forged}.${tag}`, ORG, undefined));
  });

  const malformed: Array<[string, string]> = [
    ['garbage', 'zzz'],
    ['no tag', 'eyJ2IjoxfQ'],
    ['empty tag', 'eyJ2IjoxfQ.'],
    ['empty body', '.AAAAAAAAAAAAAAAAAAAAAA'],
    ['three parts', 'a.b.c'],
    ['short tag', 'eyJ2IjoxfQ.AAAA'],
    ['non-base64 characters', 'eyJ2Ijox fQ.AAAAAAAAAAAAAAAAAAAAAA'],
    ['very long', `${'a'.repeat(2_000)}.AAAAAAAAAAAAAAAAAAAAAA`],
    ['an offset', '100'],
  ];
  it.each(malformed)('refuses %s', (_name, raw) => {
    rejects(() => codec.decode(raw, ORG, undefined));
  });

  it('refuses a cursor of another organisation', () => {
    rejects(() => codec.decode(codec.encode(OTHER_ORG, undefined, position), ORG, undefined));
  });

  it('refuses a cursor issued for another event_name filter, or for none', () => {
    rejects(() => codec.decode(codec.encode(ORG, 'purchase', position), ORG, 'signup'));
    rejects(() => codec.decode(codec.encode(ORG, 'purchase', position), ORG, undefined));
    rejects(() => codec.decode(codec.encode(ORG, undefined, position), ORG, 'purchase'));
  });

  it('refuses a cursor signed with another key', () => {
    rejects(() => codec.decode(new CursorCodec('x'.repeat(32)).encode(ORG, undefined, position), ORG, undefined));
  });

  it('draws a random key per process when no secret is configured', () => {
    const a = new CursorCodec();
    const b = new CursorCodec();
    expect(a.ephemeral).toBe(true);
    expect(codec.ephemeral).toBe(false);
    expect(a.decode(a.encode(ORG, undefined, position), ORG, undefined)).toEqual(position);
    rejects(() => b.decode(a.encode(ORG, undefined, position), ORG, undefined));
  });

  it('refuses a short secret', () => {
    expect(() => new CursorCodec('short')).toThrow(/at least 32 characters/);
  });
});

describe('merges cursor', () => {
  const codec = new CursorCodec(SECRET);
  const at = { profileId: position.profileId, id: '9007199254740993' };

  it('round-trips a journal position for its organisation, ids beyond 2^53 exactly', () => {
    expect(codec.decodeMerges(codec.encodeMerges(ORG, at), ORG)).toEqual(at);
  });

  it.each<[string, () => string]>([
    ['another organisation’s', () => codec.encodeMerges(OTHER_ORG, at)],
    ['an events cursor', () => codec.encode(ORG, undefined, position)],
    ['another key’s', () => new CursorCodec('j'.repeat(32)).encodeMerges(ORG, at)],
    ['made up', () => 'bWVyZ2Vz.AAAAAAAAAAAAAAAAAAAAAA'],
    ['empty', () => ''],
  ])('refuses %s', (_, cursor) => {
    rejects(() => codec.decodeMerges(cursor(), ORG));
  });

  it('is not taken for an events cursor', () => {
    rejects(() => codec.decode(codec.encodeMerges(ORG, at), ORG, undefined));
  });
});
