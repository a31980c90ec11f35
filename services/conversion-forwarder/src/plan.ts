import { qualifiesAsConversion, type ConversionCandidate } from '@svc/contracts';
import type { ClickRef, ConnectorRule, Conversion, Platform } from '@svc/conversions';
import { USABLE_CLICK_TYPES } from './platforms/types';

/**
 * Which connectors a candidate goes to, and with which click. Pure: the
 * consumer loads the inputs and writes the outcome.
 */

const DAY_MS = 86_400_000;

/**
 * How long after the click a platform still attributes a conversion to it,
 * counted from the click's first sighting. Google Ads accepts click uploads
 * for at most 90 days; Meta attributes clicks for at most 28 days (7 with
 * its default setting, but the longest window is what a setting can allow).
 * Past that the click is marked is_exhausted (see the resolver's README).
 */
export const CLICK_WINDOW_DAYS: Readonly<Record<string, number>> = { gclid: 90, gbraid: 90, wbraid: 90, fbclid: 28 };

export interface StoredClick {
  type: string;
  id: string;
  firstSeenAt: Date;
  lastSeenAt: Date;
  isExhausted: boolean;
}

export function isPastWindow(click: StoredClick, now: Date): boolean {
  const days = CLICK_WINDOW_DAYS[click.type];
  return days !== undefined && now.getTime() - click.firstSeenAt.getTime() > days * DAY_MS;
}

/**
 * The click to attribute a platform's conversion to: the strongest usable
 * type (gclid before gbraid before wbraid), then the most recently seen, so
 * the last click wins. Clicks past their window are returned separately, to
 * be marked exhausted.
 */
export function pickClick(platform: Platform, clicks: readonly StoredClick[], now: Date): { click: ClickRef | null; expired: StoredClick[] } {
  const usable = USABLE_CLICK_TYPES[platform];
  const expired: StoredClick[] = [];
  const live: StoredClick[] = [];
  for (const c of clicks) {
    if (!usable.includes(c.type) || c.isExhausted) continue;
    (isPastWindow(c, now) ? expired : live).push(c);
  }
  live.sort((a, b) => usable.indexOf(a.type) - usable.indexOf(b.type) || b.lastSeenAt.getTime() - a.lastSeenAt.getTime());
  const best = live[0];
  return { click: best ? { type: best.type, id: best.id, firstSeenAt: best.firstSeenAt } : null, expired };
}

/** The connectors of the candidate's organisation whose qualifying names include its event. */
export function qualifyingConnectors(candidate: ConversionCandidate, connectors: readonly ConnectorRule[]): ConnectorRule[] {
  return connectors.filter((c) => c.orgId === candidate.orgId && qualifiesAsConversion(candidate.eventName, c.eventNames));
}

/** The platform request's input: hashed contact details and the click, nothing in clear. */
export function toConversion(candidate: ConversionCandidate, click: ClickRef): Conversion {
  return {
    messageId: candidate.messageId,
    eventName: candidate.eventName,
    eventTime: new Date(candidate.eventTimestamp),
    value: candidate.value,
    currency: candidate.currency,
    orderId: candidate.orderId,
    hashedEmail: candidate.hashedEmail,
    hashedPhone: candidate.hashedPhone,
    hashedPhoneDigits: candidate.hashedPhoneDigits ?? null,
    clientIp: candidate.clientIp,
    userAgent: candidate.userAgent,
    pageUrl: candidate.pageUrl,
    click,
  };
}
