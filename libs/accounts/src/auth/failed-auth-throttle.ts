import { limitAddress, type HttpError, type Metrics } from '@svc/runtime';
import { perIpRateLimited } from '../rate-limit/responses';

export interface FailedAuthThrottleOptions {
  /** Addresses counted per window at most; past it, new ones are not counted (and never refused). Default 100,000. */
  maxAddresses?: number;
  /** Called on every refusal (a metric). */
  onRefused?: () => void;
  now?: () => number;
}

const WINDOW_MS = 60_000;

/**
 * Requests whose key did not verify (none, malformed, unknown, revoked),
 * counted per client address (an IPv6 client by its /64) in one-minute
 * windows, in this process. An address past `perMinute` such failures is
 * refused with the API's per-IP 429 before its key is looked up or its body
 * read, for the rest of the window, so a flood of made-up keys costs neither
 * a database read nor a decompression each. A key this process already holds
 * as verified is never refused (a client behind the same address as the
 * flood keeps working). Counted in memory only: each replica refuses on its
 * own count, which is what bounds the database reads it makes.
 */
export class FailedAuthThrottle {
  private counts = new Map<string, number>();
  private windowStart: number;
  private readonly maxAddresses: number;
  private readonly now: () => number;

  constructor(
    readonly perMinute: number,
    private readonly options: FailedAuthThrottleOptions = {},
  ) {
    this.maxAddresses = options.maxAddresses ?? 100_000;
    this.now = options.now ?? Date.now;
    this.windowStart = this.now();
  }

  /** The 429 for a request from `clientIp` when its address is past its failures this window; undefined otherwise. */
  refusal(clientIp: string): HttpError | undefined {
    this.roll();
    const failures = this.counts.get(limitAddress(clientIp)) ?? 0;
    if (failures < this.perMinute) return undefined;
    this.options.onRefused?.();
    const retryAfterSeconds = Math.max(1, Math.ceil((this.windowStart + WINDOW_MS - this.now()) / 1000));
    return perIpRateLimited({ rule: { bucket: 'unauthenticated', limit: this.perMinute }, hits: failures, allowed: false, remaining: 0, retryAfterSeconds });
  }

  /** A request from `clientIp` presented no key that verified. */
  failed(clientIp: string): void {
    this.roll();
    const address = limitAddress(clientIp);
    const failures = this.counts.get(address);
    if (failures === undefined && this.counts.size >= this.maxAddresses) return;
    this.counts.set(address, (failures ?? 0) + 1);
  }

  private roll(): void {
    const now = this.now();
    if (now - this.windowStart < WINDOW_MS) return;
    this.windowStart = now - ((now - this.windowStart) % WINDOW_MS);
    this.counts = new Map();
  }
}

/** A process's throttle, its refusals counted in `http_unauthenticated_throttled_total`. */
export function failedAuthThrottle(perMinute: number, metrics: Pick<Metrics, 'unauthenticatedThrottled'>): FailedAuthThrottle {
  return new FailedAuthThrottle(perMinute, { onRefused: () => metrics.unauthenticatedThrottled.inc() });
}
