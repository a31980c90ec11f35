import type { ReferrerEntry } from './types';
import { decode } from './util';

/**
 * Platform click IDs kept on campaign context (and never redacted): the
 * spec's list, CLICK_ID_TYPES of the contracts package, written out here so the
 * script-tag build carries no code of contracts; campaign.test.ts holds the
 * two equal.
 */
export const CLICK_IDS: readonly string[] = [
  'gclid', 'fbclid', 'ttclid', 'msclkid', 'li_fat_id', 'gbraid', 'wbraid', 'twclid', 'igshid', 'epik', 'dclid', 'rdt_cid', 'gad_source',
];

const UTM: Record<string, string> = {
  utm_source: 'source',
  utm_medium: 'medium',
  utm_campaign: 'name',
  utm_term: 'term',
  utm_content: 'content',
};

/** The most entries kept in the referrer chain (oldest dropped first). */
export const MAX_REFERRER_CHAIN = 10;

/** Campaign fields (UTM and click IDs) of a query string; the first value of a repeated parameter wins. */
export function parseCampaign(search: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of search.replace(/^\?/, '').split('&')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const key = decode(part.slice(0, eq)).toLowerCase();
    const field = UTM[key] ?? (CLICK_IDS.includes(key) ? key : undefined);
    const value = decode(part.slice(eq + 1)).trim().slice(0, 500);
    if (field && value && !(field in out)) out[field] = value;
  }
  return out;
}

/** The host of an absolute URL, lower-cased, or '' when it has none. */
export function hostOf(url: string): string {
  return (/^[a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?([^:/?#]*)/i.exec(url)?.[1] ?? '').toLowerCase();
}

/**
 * The referrer chain after a landing with `referrer`: an external referrer
 * (another host than `ownHost`) is appended unless it repeats the last entry.
 */
export function extendReferrerChain(chain: ReferrerEntry[], referrer: string, ownHost: string, timestamp: string): ReferrerEntry[] {
  const host = hostOf(referrer);
  if (!host || host === ownHost.toLowerCase() || chain[chain.length - 1]?.url === referrer) return chain;
  return [...chain, { url: referrer, timestamp }].slice(-MAX_REFERRER_CHAIN);
}
