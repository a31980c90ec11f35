import { describe, expect, it } from '@jest/globals';
import { boundedErrorText, MAX_ERROR_LENGTH, redactSecrets, safeOutcome } from './redact';

const SECRET = 'tok/en+SECRET "quoted"';

describe('redactSecrets', () => {
  it.each([
    ['as sent', `bad token ${SECRET}`],
    ['percent-encoded', `bad token ${encodeURIComponent(SECRET)}`],
    ['form-encoded', `body was ${new URLSearchParams({ token: SECRET }).toString()}`],
    ['JSON-escaped', `body was ${JSON.stringify({ token: SECRET })}`],
  ])('removes a secret %s', (_name, text) => {
    const redacted = redactSecrets(text, [SECRET]);
    expect(redacted).toContain('[redacted]');
    expect(redacted).not.toContain('SECRET');
  });

  it('replaces a secret that contains another whole', () => {
    expect(redactSecrets('x abcdef y', ['abc', 'abcdef'])).toBe('x [redacted] y');
  });

  it('ignores empty secrets', () => {
    expect(redactSecrets('unchanged', ['', 'absent'])).toBe('unchanged');
  });
});

describe('boundedErrorText', () => {
  it('keeps short text and cuts long text to the limit', () => {
    expect(boundedErrorText('short')).toBe('short');
    const cut = boundedErrorText('x'.repeat(2000));
    expect(cut).toHaveLength(MAX_ERROR_LENGTH);
    expect(cut.endsWith('…')).toBe(true);
  });
});

describe('safeOutcome', () => {
  it('redacts before cutting, so no partial secret survives at the cut', () => {
    const secret = 's'.repeat(40);
    const text = `${'x'.repeat(MAX_ERROR_LENGTH - 10)}${secret}`;
    const outcome = safeOutcome({ kind: 'failed', status: 400, error: text, clickUnusable: false }, [secret]);
    expect(outcome.kind === 'failed' && outcome.error).not.toContain('ssss');
  });

  it('passes sent outcomes through', () => {
    expect(safeOutcome({ kind: 'sent', status: 200 }, ['x'])).toEqual({ kind: 'sent', status: 200 });
  });
});
