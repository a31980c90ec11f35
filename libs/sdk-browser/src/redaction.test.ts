import { describe, expect, it } from '@jest/globals';
import { createRedactor, REDACTED } from './redaction';

const redact = createRedactor(['ref_code']);

describe('URL redaction', () => {
  it('redacts the built-in sensitive parameters in the query', () => {
    expect(redact('https://a.example/p?token=abc&x=1&password=hunter2&Access_Token=z&API-KEY=k&code=123')).toBe(
      `https://a.example/p?token=${REDACTED}&x=1&password=${REDACTED}&Access_Token=${REDACTED}&API-KEY=${REDACTED}&code=${REDACTED}`,
    );
  });

  it('redacts in the fragment, for hash routes and OAuth implicit-flow fragments', () => {
    expect(redact('https://a.example/#/reset?otp=991&step=2')).toBe(`https://a.example/#/reset?otp=${REDACTED}&step=2`);
    expect(redact('https://a.example/cb#access_token=t0k&token_type=bearer&state=s')).toBe(`https://a.example/cb#access_token=${REDACTED}&token_type=${REDACTED}&state=${REDACTED}`);
    expect(redact('https://a.example/docs#section-2')).toBe('https://a.example/docs#section-2');
  });

  it('keeps utm_* and click IDs, whatever their value', () => {
    const url = 'https://a.example/?utm_source=news&utm_content=password&gclid=Cj0&fbclid=IwAR&gad_source=1&msclkid=m';
    expect(redact(url)).toBe(url);
  });

  it('applies maskQueryParams and catches substrings, bracketed names and email values', () => {
    expect(redact('?ref_code=A1&csrf_token=q&user[email]=a&next=bob%40mail.example&q=shoes')).toBe(
      `?ref_code=${REDACTED}&csrf_token=${REDACTED}&user[email]=${REDACTED}&next=${REDACTED}&q=shoes`,
    );
  });

  it('leaves empty values, bare keys, and URLs without parameters alone', () => {
    expect(redact('https://a.example/p?token=&session')).toBe('https://a.example/p?token=&session');
    expect(redact('https://a.example/p')).toBe('https://a.example/p');
    expect(redact('')).toBe('');
  });

  it('works on bare search and hash strings', () => {
    expect(redact('?email=a%40b.co')).toBe(`?email=${REDACTED}`);
    expect(redact('#secret=1')).toBe(`#secret=${REDACTED}`);
  });
});
