import { Headers, Limits, Messages } from '@svc/contracts';
import {
  HttpError,
  isDatabaseUnavailable,
} from '@svc/runtime';
import { perIpRateLimited, perOrgIpRule, rateLimitHeaders, type RateLimitRule, type RateLimitVerdict, type VerifiedKey } from '@svc/accounts';

/**
 * The two request-rate rules of POST /v1-batch: per (organisation, client IP),
 * tightened by the key's own cap when it has one, and per organisation.
 */
export function batchRateRules(key: VerifiedKey, clientIp: string): [RateLimitRule, RateLimitRule] {
  return [
    perOrgIpRule('batch', key, clientIp, Limits.rate.batchPerOrgIp),
    { bucket: `batch:org:${key.orgId}`, limit: Limits.rate.batchPerOrg },
  ];
}

/** The 429 for the first broken rule, or undefined when every rule allows the request. */
export function rateLimitError([perIp, perOrg]: RateLimitVerdict[]): HttpError | undefined {
  if (perIp && !perIp.allowed) return perIpRateLimited(perIp);
  if (perOrg && !perOrg.allowed) {
    // The spec's per-organisation 429 carries only `error`: no `success`, no `code`.
    return new HttpError(429, Messages.rateLimitedPerOrg(perOrg.rule.limit), {
      omitSuccessField: true,
      headers: rateLimitHeaders(perOrg),
    });
  }
  return undefined;
}

/** Reads an organisation's unique events this month; throws when the store cannot answer. */
export type UsageReader = (orgId: string, at: Date) => Promise<number>;

/**
 * `read`, answering with an organisation's last reading (of the same month)
 * while the database cannot be reached, if that reading is at most
 * `graceMs` old: an organisation with a quota keeps ingesting through a
 * failover like one without. What it sends meanwhile is counted when the
 * resolver stores it, so the quota is settled afterwards.
 */
export function rememberedThroughOutage(read: UsageReader, graceMs: number, now: () => number = Date.now): UsageReader {
  const last = new Map<string, { used: number; month: string; at: number }>();
  return async (orgId, at) => {
    const month = at.toISOString().slice(0, 7);
    try {
      const used = await read(orgId, at);
      last.set(orgId, { used, month, at: now() });
      return used;
    } catch (err) {
      const known = last.get(orgId);
      if (known && known.month === month && now() - known.at <= graceMs && isDatabaseUnavailable(err)) return known.used;
      throw err;
    }
  };
}

/**
 * The plan-quota step: `paused` → 429 with Retry-After 86400 and upgrade_url;
 * `limit_reached`, or the monthly quota used up → 429 with no Retry-After;
 * usage unreadable → 503 with Retry-After 30. Usage is read only when the
 * organisation has a quota.
 */
export async function checkQuota(
  key: VerifiedKey,
  readUsage: UsageReader,
  now: Date,
  upgradeUrl: string,
): Promise<HttpError | undefined> {
  if (key.planState === 'paused') {
    return new HttpError(429, Messages.quotaPaused, {
      headers: { [Headers.retryAfter]: String(Limits.retryAfterPausedSeconds) },
      body: { upgrade_url: upgradeUrl },
    });
  }
  if (key.planState === 'limit_reached') return new HttpError(429, Messages.monthlyLimitReached);
  if (key.monthlyEventQuota === null) return undefined;
  let used: number;
  try {
    used = await readUsage(key.orgId, now);
  } catch (err) {
    return new HttpError(503, Messages.usageCheckFailed, {
      headers: { [Headers.retryAfter]: String(Limits.retryAfterUnavailableSeconds) },
      cause: err,
    });
  }
  return used >= key.monthlyEventQuota ? new HttpError(429, Messages.monthlyLimitReached) : undefined;
}
