import type { CryptoLike } from './dom';

export type Dict = Record<string, unknown>;

/** A plain object (not null, not an array). */
export function isObject(value: unknown): value is Dict {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An RFC 4122 version 4 UUID: crypto.randomUUID, else getRandomValues, else the given random source. */
export function uuid(crypto: CryptoLike | undefined, random: () => number): string {
  if (crypto && typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  let bytes: Uint8Array = new Uint8Array(16);
  if (crypto && typeof crypto.getRandomValues === 'function') bytes = crypto.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(random() * 256);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  let hex = '';
  for (let i = 0; i < 16; i++) {
    hex += ((bytes[i] ?? 0) + 0x100).toString(16).slice(1);
    if (i === 3 || i === 5 || i === 7 || i === 9) hex += '-';
  }
  return hex;
}

/** Bytes of `text` encoded as UTF-8 (what a request body costs on the wire). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** decodeURIComponent that treats `+` as a space and never throws. */
export function decode(text: string): string {
  const spaced = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

/** The decoded value of the first `name` parameter in a query string (`?a=1&b=2`), or undefined. */
export function queryParam(search: string, name: string): string | undefined {
  for (const part of search.replace(/^[?#]/, '').split('&')) {
    const eq = part.indexOf('=');
    if (eq > 0 && decode(part.slice(0, eq)) === name) return decode(part.slice(eq + 1));
  }
  return undefined;
}
