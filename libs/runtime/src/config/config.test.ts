import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { ConfigError, env, loadConfig } from './config';

const spec = {
  NAME: env.string({ description: 'a name' }),
  COUNT: env.int({ description: 'a count', default: 3, min: 1, max: 10 }),
  ON: env.bool({ description: 'a switch', default: false }),
  HOSTS: env.list({ description: 'hosts', default: [] }),
  MODE: env.enum(['a', 'b'] as const, { description: 'a mode', default: 'a' }),
  TOKEN: env.optionalString({ description: 'a token', secret: true }),
};

describe('loadConfig', () => {
  it('parses every kind and freezes the result', () => {
    const config = loadConfig(spec, { NAME: 'x', COUNT: '7', ON: 'yes', HOSTS: 'a:1, b:2,', MODE: 'b' });
    expect(config).toEqual({ NAME: 'x', COUNT: 7, ON: true, HOSTS: ['a:1', 'b:2'], MODE: 'b', TOKEN: undefined });
    expect(Object.isFrozen(config)).toBe(true);
  });

  const problems: Array<[Record<string, string>, RegExp]> = [
    [{}, /NAME is required: a name/],
    [{ NAME: 'x', COUNT: '0' }, /COUNT must be an integer from 1 to 10 \(got "0"\)/],
    [{ NAME: 'x', COUNT: '2.5' }, /COUNT must be an integer \(got "2.5"\)/],
    [{ NAME: 'x', ON: 'maybe' }, /ON must be true or false/],
    [{ NAME: 'x', MODE: 'c' }, /MODE must be one of a, b/],
  ];
  it.each(problems)('reports %j', (source, message) => {
    expect(() => loadConfig(spec, source)).toThrow(message);
  });

  it('reports all problems together', () => {
    try {
      loadConfig(spec, { COUNT: 'x', MODE: 'z' });
      throw new Error('expected a ConfigError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toHaveLength(3);
    }
  });

  describe('a secret from a file (X_FILE)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-config-'));
    const file = (name: string, text: string) => {
      const p = path.join(dir, name);
      writeFileSync(p, text);
      return p;
    };

    it.each([
      ['a trailing newline dropped', 's3cret\n', 's3cret'],
      ['a CRLF dropped', 's3cret\r\n', 's3cret'],
      ['no newline kept as is', 's3cret', 's3cret'],
      ['only one newline dropped', 's3cret\n\n', 's3cret\n'],
    ])('reads the file: %s', (_, text, value) => {
      expect(loadConfig(spec, { NAME: 'x', TOKEN_FILE: file('token', text) }).TOKEN).toBe(value);
    });

    it('refuses both X and X_FILE', () => {
      expect(() => loadConfig(spec, { NAME: 'x', TOKEN: 'a', TOKEN_FILE: file('t2', 'b') })).toThrow(/TOKEN and TOKEN_FILE are both set: set one/);
    });

    it('names an unreadable file without echoing anything from it, and reports it once', () => {
      try {
        loadConfig(spec, { NAME: 'x', TOKEN_FILE: path.join(dir, 'missing') });
        throw new Error('expected a ConfigError');
      } catch (err) {
        expect((err as ConfigError).problems).toEqual([`TOKEN_FILE must name a readable file (ENOENT: ${path.join(dir, 'missing')})`]);
      }
    });

    it('is only for secrets: NAME_FILE is not read', () => {
      expect(() => loadConfig(spec, { NAME_FILE: file('name', 'x') })).toThrow(/NAME is required/);
    });
  });
});
