import http from 'node:http';

/**
 * The pipeline benchmark's load generator, run as its own process (forked by
 * pipeline-bench.ts, so it never shares an event loop with the stack or with
 * the lag poller). Open loop: batches of 100 events are scheduled at a fixed
 * rate and each is sent at its scheduled time whatever became of the earlier
 * ones; a request's latency runs from its scheduled start, so a stalled
 * server is not hidden by sending less. Bounded in time (warm-up + duration)
 * and in concurrency (at most MAX_IN_FLIGHT requests; a batch that finds no
 * free slot waits for one, its latency still counted from its schedule, and
 * batches still waiting when the time is up are dropped and reported).
 *
 * Two traffic shapes (LoadConfig.shape), over a pool of visitors (anonymous
 * ids) split evenly over the organisations: `collector`, a batch is 10 random
 * visitors with 10 events each (what a busy site's collector forwards, the
 * worst case for per-profile work); `sessions`, a batch is one visitor's 5 to
 * 30 events (as the browser library sends them). The mix per event: page ~45%, track ~40% (a few of them
 * purchases), identify ~8% (userId, email, phone), alias ~2% (the visitor's
 * userId with, as previousId, its own anonymous id half the time and another
 * visitor's of the same organisation otherwise: another device, a merge), screen ~3%, group ~2%. About a quarter of page views
 * carry a campaign (UTM source/medium/name, a third of those a gclid or fbclid),
 * every event a session id (30-minute buckets), one in ten visitors a consented
 * fingerprint.
 */

export interface LoadConfig {
  url: string;
  /** One write key per organisation, and its id, in the order the visitors are split. */
  orgs: ReadonlyArray<{ id: string; key: string }>;
  /** Events per second. */
  rate: number;
  warmupMs: number;
  durationMs: number;
  /** Visitors in the pool; visitor v belongs to organisation v % orgs. */
  visitors: number;
  runId: string;
  shape: TrafficShape;
}

export type TrafficShape = 'collector' | 'sessions';
export const TRAFFIC_SHAPES: readonly TrafficShape[] = ['collector', 'sessions'];

/** Events per batch on average, by shape (sessions: 5 to 30, uniformly). */
export const MEAN_BATCH_EVENTS: Readonly<Record<TrafficShape, number>> = { collector: 100, sessions: 17.5 };

/** What the generator tells its parent. */
export type LoadMessage =
  | { type: 'measuring'; at: number }
  /** One sampled event per accepted batch: when its 200 arrived (epoch ms). */
  | { type: 'ack'; orgId: string; messageId: string; ackAt: number; measured: boolean }
  | { type: 'done'; result: LoadReport };

export interface LoadReport {
  /** Over the measured window only. */
  scheduled: number;
  sent: number;
  dropped: number;
  non200: number;
  statuses: Record<string, number>;
  eventsAccepted: number;
  /** Including the warm-up: what the resolver has to store in the end. */
  eventsAcceptedTotal: number;
  seconds: number;
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** CPU of this process over the measured window, in cores. */
  cores: number;
}

const COLLECTOR_VISITORS = 10;
const MAX_IN_FLIGHT = 256;
const SESSION_MS = 30 * 60_000;

/** A tiny deterministic PRNG (mulberry32), so runs draw the same mix. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PRODUCTS = ['trail-runner', 'road-racer', 'city-walker', 'hill-climber', 'beach-sandal', 'winter-boot'];
const TRACK_NAMES = ['Product Viewed', 'Product Viewed', 'Product Clicked', 'Added to Cart', 'Checkout Started', 'Search Performed', 'Video Played'];
const SOURCES = [
  { source: 'google', medium: 'cpc', click: 'gclid' },
  { source: 'facebook', medium: 'paid_social', click: 'fbclid' },
  { source: 'newsletter', medium: 'email', click: null },
  { source: 'partner-blog', medium: 'referral', click: null },
] as const;

export const anonymousIdOf = (runPool: string, visitor: number): string => `anon_${runPool}_${visitor}`;

/** The request body of batch `seq` for organisation `org` (index), and the messageId sampled for the lag. */
export function pipelineBatch(c: LoadConfig, seq: number, org: number, pool: string, random: () => number): { body: string; sample: string } {
  const now = Date.now();
  const iso = new Date(now).toISOString();
  const orgs = c.orgs.length;
  const perOrg = Math.floor(c.visitors / orgs);
  const events: Array<Record<string, unknown>> = [];
  const visitors = c.shape === 'collector' ? COLLECTOR_VISITORS : 1;
  for (let v = 0; v < visitors; v++) {
    const visitor = org + orgs * Math.floor(random() * perOrg);
    const count = c.shape === 'collector' ? 100 / COLLECTOR_VISITORS : 5 + Math.floor(random() * 26);
    const anonymousId = anonymousIdOf(pool, visitor);
    const sessionId = `s_${visitor}_${Math.floor(now / SESSION_MS)}`;
    const product = PRODUCTS[visitor % PRODUCTS.length]!;
    const fingerprinted = visitor % 10 === 3;
    for (let i = 0; i < count; i++) {
      const n = events.length;
      const r = random();
      const context: Record<string, unknown> = {
        library: { name: 'svc-browser', version: '1.5.0' },
        locale: 'en-GB',
        timezone: 'Europe/London',
        user_agent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
        session: { id: sessionId, started_at: iso, page_views: i + 1, events_count: i + 1, is_new_session: i === 0 },
        screen: { width: 1920, height: 1080, density: 1 },
        page: { url: `https://shop.example.com/products/${product}`, path: `/products/${product}`, title: product, referrer: 'https://www.example.org/' },
        ...(fingerprinted ? { consent: { fingerprinting: true }, fingerprint: { hash: `fp_${visitor.toString(16)}` } } : {}),
      };
      const base = { messageId: `${c.runId}-${seq}-${n}`, anonymousId, timestamp: iso, context };
      if (r < 0.45) {
        if (random() < 0.25) {
          const s = SOURCES[Math.floor(random() * SOURCES.length)]!;
          const click = s.click && random() < 0.7 ? { [s.click]: `${s.click}-${c.runId}-${visitor}-${Math.floor(random() * 1000)}` } : {};
          context.campaign = { source: s.source, medium: s.medium, name: 'autumn-sale', term: 'running shoes', ...click };
          (context.page as Record<string, unknown>).url = `https://shop.example.com/products/${product}?utm_source=${s.source}&utm_medium=${s.medium}&utm_campaign=autumn-sale`;
        }
        events.push({ ...base, type: 'page', properties: { path: `/products/${product}`, title: product, url: `https://shop.example.com/products/${product}` } });
      } else if (r < 0.85) {
        const purchase = random() < 0.03;
        events.push({
          ...base,
          type: 'track',
          event: purchase ? 'purchase' : TRACK_NAMES[Math.floor(random() * TRACK_NAMES.length)]!,
          properties: { sku: `SKU-${product}`, price: 89.99, currency: 'EUR', category: 'shoes', list: 'search results', position: i, ...(purchase ? { value: 89.99, order_id: `o-${c.runId}-${seq}-${n}` } : {}) },
        });
      } else if (r < 0.93) {
        events.push({
          ...base,
          type: 'identify',
          userId: `user_${visitor}`,
          traits: { email: `User.${visitor}@Example.com`, phone: `+4477${String(visitor).padStart(8, '0')}`, name: `Visitor ${visitor}`, plan: visitor % 5 === 0 ? 'pro' : 'free' },
        });
      } else if (r < 0.95) {
        // Half link the visitor's own anonymous id (no merge), half another visitor's (another device: a merge).
        const other = random() < 0.5 ? visitor : org + orgs * Math.floor(random() * perOrg);
        events.push({ ...base, type: 'alias', userId: `user_${visitor}`, previousId: anonymousIdOf(pool, other) });
      } else if (r < 0.98) {
        events.push({ ...base, type: 'screen', properties: { name: 'Product Detail', product } });
      } else {
        events.push({ ...base, type: 'group', groupId: `company_${visitor % 997}`, traits: { name: `Company ${visitor % 997}`, industry: 'retail' } });
      }
    }
  }
  const sample = events[Math.floor(random() * events.length)]!.messageId as string;
  return { body: JSON.stringify({ batch: events }), sample };
}

function post(url: string, agent: http.Agent, key: string, forwardedFor: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${key}`,
          'content-length': Buffer.byteLength(body),
          // The stack trusts 127.0.0.0/8 as a proxy: every request is its own client, as on the internet.
          'x-forwarded-for': forwardedFor,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', () => resolve({ status: 0, text }));
      },
    );
    req.on('error', () => resolve({ status: 0, text: '' }));
    req.end(body);
  });
}

export async function runPipelineLoad(c: LoadConfig, send: (m: LoadMessage) => void): Promise<LoadReport> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT });
  const random = rng(0x5eed);
  const pool = 'p';
  const intervalMs = (1000 * MEAN_BATCH_EVENTS[c.shape]) / c.rate;
  const started = performance.now();
  const measureFrom = started + c.warmupMs;
  const until = measureFrom + c.durationMs;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let seq = 0;
  let inFlight = 0;
  let scheduled = 0;
  let sent = 0;
  let dropped = 0;
  let non200 = 0;
  let accepted = 0;
  let acceptedTotal = 0;
  let measuringSent = false;
  let cpu0 = process.cpuUsage();
  const waiting: number[] = [];
  let idle: (() => void) | undefined;

  const fire = (n: number, due: number): void => {
    const org = n % c.orgs.length;
    const { id: orgId, key } = c.orgs[org]!;
    const measured = due >= measureFrom;
    const { body, sample } = pipelineBatch(c, n, org, pool, random);
    const ip = `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
    inFlight++;
    sent += measured ? 1 : 0;
    void post(c.url, agent, key, ip, body).then(({ status, text }) => {
      inFlight--;
      const ackAt = Date.now();
      if (status === 200) {
        let processed = 0;
        try {
          processed = (JSON.parse(text) as { processed: number }).processed;
        } catch {
          // counted as nothing accepted
        }
        acceptedTotal += processed;
        if (measured) accepted += processed;
        send({ type: 'ack', orgId, messageId: sample, ackAt, measured });
      }
      if (measured) {
        latencies.push(performance.now() - due);
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status !== 200) non200++;
      }
      pump();
      if (inFlight === 0) idle?.();
    });
  };

  const pump = (): void => {
    while (waiting.length > 0 && inFlight < MAX_IN_FLIGHT) {
      const due = waiting.shift()!;
      fire(seq++, due);
    }
  };

  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      if (!measuringSent && now >= measureFrom) {
        measuringSent = true;
        cpu0 = process.cpuUsage();
        send({ type: 'measuring', at: Date.now() });
      }
      // Every batch whose time has come; the schedule is absolute, so a late tick catches up.
      const end = Math.min(now, until);
      while (started + scheduled * intervalMs <= end) {
        const due = started + scheduled * intervalMs;
        scheduled++;
        waiting.push(due);
      }
      pump();
      if (now >= until) {
        clearInterval(timer);
        resolve();
      }
    };
    const timer = setInterval(tick, 2);
  });
  // Batches that never found a slot are not sent (bounded run); their count says the stack fell behind.
  for (const due of waiting.splice(0)) if (due >= measureFrom) dropped++;
  if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve));
  const cpu = process.cpuUsage(cpu0);
  agent.destroy();
  const seconds = c.durationMs / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  const measuredScheduled = Math.max(0, Math.floor(c.durationMs / intervalMs));
  return {
    scheduled: measuredScheduled,
    sent,
    dropped,
    non200,
    statuses,
    eventsAccepted: accepted,
    eventsAcceptedTotal: acceptedTotal,
    seconds,
    eventsPerSecond: accepted / seconds,
    p50Ms: pct(50),
    p99Ms: pct(99),
    maxMs: latencies[latencies.length - 1] ?? 0,
    cores: (cpu.user + cpu.system) / 1e6 / ((performance.now() - measureFrom) / 1000),
  };
}

// Forked by pipeline-bench.ts: the configuration comes as the first IPC message.
if (require.main === module && process.send) {
  process.once('message', (c: LoadConfig) => {
    const send = (m: LoadMessage): void => {
      process.send?.(m);
    };
    runPipelineLoad(c, send)
      .then((result) => {
        send({ type: 'done', result });
        process.disconnect?.();
      })
      .catch((err: unknown) => {
        console.error(err);
        process.exit(1);
      });
  });
}
