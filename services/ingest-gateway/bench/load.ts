import http from 'node:http';

/** One measured step of the load: how much got in, and how fast requests came back. */
export interface LoadResult {
  concurrency: number;
  requests: number;
  non200: number;
  eventsAccepted: number;
  seconds: number;
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

export interface LoadOptions {
  /** The gateway replicas' batch URLs: each worker keeps to one, round-robin, as a load balancer with sticky connections would. */
  urls: readonly string[];
  /** One write key per organisation; requests rotate over them. */
  keys: readonly string[];
  /** Loopback source addresses (127.0.0.x); requests rotate over them, so limits apply per (org, IP) as in production. */
  sourceIps: readonly string[];
  concurrency: number;
  durationMs: number;
  /** A request body: a full batch of ~1 KB events with fresh messageIds. */
  body: (seq: number) => string;
  /** The Authorization header for a key (default `Bearer <key>`; a peer may want Basic). */
  authorization?: (key: string) => string;
  /** Events a 200 accepted (default: our answer's `processed`; a peer answering `ok` counts the whole batch). */
  accepted?: (responseText: string) => number;
}

/**
 * A closed-loop load: `concurrency` workers each post, wait for the answer,
 * and post again, until the duration is over. Bounded in time by construction.
 */
export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const authorization = o.authorization ?? ((key: string) => `Bearer ${key}`);
  const countAccepted = o.accepted ?? ((text: string) => (JSON.parse(text) as { processed: number }).processed);
  const agents = o.sourceIps.map((localAddress) => new http.Agent({ keepAlive: true, maxSockets: o.concurrency, localAddress }));
  const latencies: number[] = [];
  let requests = 0;
  let non200 = 0;
  let accepted = 0;
  let seq = 0;
  const started = performance.now();
  const until = started + o.durationMs;

  const worker = async (w: number): Promise<void> => {
    const url = o.urls[w % o.urls.length]!;
    while (performance.now() < until) {
      const n = seq++;
      const agent = agents[(n + w) % agents.length]!;
      const key = o.keys[Math.floor(n / agents.length) % o.keys.length]!;
      const body = o.body(n);
      const t0 = performance.now();
      const { status, text } = await post(url, agent, authorization(key), body);
      latencies.push(performance.now() - t0);
      requests++;
      if (status === 200) accepted += countAccepted(text);
      else non200++;
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, (_, w) => worker(w)));
  const seconds = (performance.now() - started) / 1000;
  for (const a of agents) a.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  return {
    concurrency: o.concurrency,
    requests,
    non200,
    eventsAccepted: accepted,
    seconds,
    eventsPerSecond: accepted / seconds,
    p50Ms: pct(50),
    p99Ms: pct(99),
  };
}

function post(url: string, agent: http.Agent, authorization: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', authorization, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A batch of `events` realistic ~1 KB events (page/track mix with campaign context). */
export function batchBody(seq: number, runId: string, events: number): string {
  const now = new Date().toISOString();
  const batch = Array.from({ length: events }, (_, i) => {
    const visitor = `anon_${runId}_${(seq * 7 + i) % 5000}`;
    return {
      type: i % 3 === 0 ? 'page' : 'track',
      event: i % 3 === 0 ? undefined : 'Product Viewed',
      messageId: `${runId}-${seq}-${i}`,
      anonymousId: visitor,
      timestamp: now,
      properties: { sku: `SKU-${i}`, price: 19.99, currency: 'EUR', category: 'shoes', list: 'search results', position: i },
      context: {
        page: { url: 'https://shop.example.com/products/trail-runner?utm_source=news', path: '/products/trail-runner', title: 'Trail Runner', referrer: 'https://www.example.org/' },
        campaign: { source: 'newsletter', medium: 'email', name: 'autumn-sale', gclid: 'Cj0KCQiA-example-gclid' },
        library: { name: 'svc-browser', version: '1.5.0' },
        locale: 'en-GB',
        timezone: 'Europe/London',
        user_agent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
        session: { id: `s_${visitor}`, started_at: now, page_views: 3, events_count: 9, is_new_session: false },
        screen: { width: 1920, height: 1080, density: 1 },
      },
    };
  });
  return JSON.stringify({ batch });
}
