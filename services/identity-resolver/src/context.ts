import { CLICK_ID_TYPES, grantsFingerprinting, type ClickType } from '@svc/contracts';
import type { Touch } from '@svc/identity';

/**
 * What the resolver reads from an event's context: campaign touches, click
 * IDs, the session and the fingerprint. Pure functions, no I/O.
 */

/**
 * The platform a click ID comes from, used as source and medium when the
 * campaign carries no UTM values (as Google Analytics does for gclid).
 * igshid marks an Instagram share, not a paid click.
 */
export const CLICK_ID_PLATFORM: Readonly<Record<ClickType, { source: string; medium: string }>> = {
  gclid: { source: 'google', medium: 'cpc' },
  gbraid: { source: 'google', medium: 'cpc' },
  wbraid: { source: 'google', medium: 'cpc' },
  gad_source: { source: 'google', medium: 'cpc' },
  dclid: { source: 'google', medium: 'display' },
  fbclid: { source: 'facebook', medium: 'cpc' },
  igshid: { source: 'instagram', medium: 'social' },
  ttclid: { source: 'tiktok', medium: 'cpc' },
  msclkid: { source: 'bing', medium: 'cpc' },
  li_fat_id: { source: 'linkedin', medium: 'cpc' },
  twclid: { source: 'twitter', medium: 'cpc' },
  epik: { source: 'pinterest', medium: 'cpc' },
  rdt_cid: { source: 'reddit', medium: 'cpc' },
};

const MAX_TEXT = 500;

const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

function text(v: unknown, max = MAX_TEXT): string | null {
  if (typeof v !== 'string') return null;
  const t = v.trim();
  return t.length > 0 && t.length <= max ? t : null;
}

export interface ClickIdSighting {
  clickType: ClickType;
  clickId: string;
  campaignSource: string | null;
  campaignMedium: string | null;
}

/** Click IDs in context.campaign, with the campaign's source and medium (or the platform's). */
export function clickIdsOf(context: unknown): ClickIdSighting[] {
  const campaign = asRecord(asRecord(context)?.campaign);
  if (!campaign) return [];
  const source = text(campaign.source);
  const medium = text(campaign.medium);
  const out: ClickIdSighting[] = [];
  for (const clickType of CLICK_ID_TYPES) {
    const clickId = text(campaign[clickType]);
    if (clickId === null) continue;
    const platform = CLICK_ID_PLATFORM[clickType];
    out.push({
      clickType,
      clickId,
      campaignSource: source ?? platform.source,
      campaignMedium: medium ?? (source === null ? platform.medium : null),
    });
  }
  return out;
}

/**
 * The touch an event makes: context.campaign's source, medium and name, when
 * it has any of them or a click ID (whose platform then names the source).
 * Null when the event carries no campaign.
 */
export function touchOf(context: unknown, at: string): Touch | null {
  const campaign = asRecord(asRecord(context)?.campaign);
  if (!campaign) return null;
  let source = text(campaign.source);
  let medium = text(campaign.medium);
  const name = text(campaign.name);
  if (source === null && medium === null) {
    const click = clickIdsOf(context)[0];
    if (click) {
      source = click.campaignSource;
      medium = click.campaignMedium;
    }
  }
  if (source === null && medium === null && name === null) return null;
  return { source, medium, campaign: name, at };
}

/** context.session.id, when present. */
export function sessionIdOf(context: unknown): string | null {
  return text(asRecord(asRecord(context)?.session)?.id, 200);
}

/**
 * context.fingerprint.hash, only when the same context grants it. The gateway
 * drops an ungranted fingerprint already; this holds for any other producer too.
 */
export function fingerprintOf(context: unknown): string | null {
  const ctx = asRecord(context);
  if (!ctx || !grantsFingerprinting(ctx.consent)) return null;
  return text(asRecord(ctx.fingerprint)?.hash, 200);
}

/** The context as stored: as sent, minus a fingerprint its consent does not grant. */
export function storedContext(context: unknown): Record<string, unknown> {
  const ctx = asRecord(context);
  if (!ctx) return {};
  if (!('fingerprint' in ctx) || grantsFingerprinting(ctx.consent)) return ctx;
  const { fingerprint: _dropped, ...rest } = ctx;
  return rest;
}

/** The earlier of two touches (the existing one on a tie). */
export function earlierTouch(a: Touch | null, b: Touch | null): Touch | null {
  if (!a) return b;
  if (!b) return a;
  return Date.parse(b.at) < Date.parse(a.at) ? b : a;
}

/** The later of two touches (the newer arrival, b, on a tie). */
export function laterTouch(a: Touch | null, b: Touch | null): Touch | null {
  if (!a) return b;
  if (!b) return a;
  return Date.parse(b.at) >= Date.parse(a.at) ? b : a;
}
