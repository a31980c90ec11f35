/**
 * Issue 33's traces, end to end on the real stack and both bus tiers, into a
 * real OpenTelemetry Collector (built from its Go modules): one batch a
 * client sends with its own traceparent becomes one trace, the client's,
 * holding the gateway's request span, the resolver's span for the request's
 * events (the context rode in the raw log's message headers), the
 * forwarder's span for the conversion candidate it was handed (through the
 * outbox and conversions.candidates' headers) and the delivery to the
 * platform, each the child of the one before.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { prefixedTopics, readToEnd } from '@svc/bus';
import { TRACEPARENT_HEADER } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import {
  describeWithKafka,
  describeWithOtelCollector,
  describeWithPostgres,
  kafkaEnv,
  startOtelCollector,
  type ExportedSpan,
  type RunningOtelCollector,
} from '@svc/testkit';
import { startStackWithMeta, type StackWithMeta } from './test-support/stack-with-meta';

type Tier = 'postgres-log' | 'kafka';
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

function traceSuite(tier: Tier): void {
  let running: StackWithMeta;
  let collector: RunningOtelCollector;
  let base: string;
  let writeKey: string;
  const prefix = `trace${randomBytes(4).toString('hex')}.`;
  const topics = prefixedTopics(prefix);
  const busEnv: Record<string, string> = { TOPIC_PREFIX: prefix, ...(tier === 'kafka' ? kafkaEnv() : {}) };

  beforeAll(async () => {
    collector = await startOtelCollector();
    running = await startStackWithMeta(`traces-${tier}`, {
      busEnv,
      env: { FORWARDER_POLL_INTERVAL_MS: '100', OUTBOX_RELAY_INTERVAL_MS: '100', OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint },
    });
    base = `${running.stack.url}/functions/v1`;
    const accounts = new AccountsStore(running.t.db);
    const { id } = await accounts.createOrganization({ name: 'Traced' });
    writeKey = (await accounts.createApiKey({ orgId: id, type: 'write' })).key;
    await running.connectToMeta(id);
  }, 180_000);

  afterAll(async () => {
    await running?.stop();
    await collector?.stop();
  }, 120_000);

  it('one batch with the client’s traceparent is one trace: request, resolution, candidate, delivery, each the child of the one before', async () => {
    const traceId = randomBytes(16).toString('hex');
    const clientSpan = randomBytes(8).toString('hex');
    const at = new Date().toISOString();
    const anonymousId = `anon-${randomUUID()}`;
    const res = await fetch(`${base}/v1-batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${writeKey}`, 'content-type': 'application/json', [TRACEPARENT_HEADER]: `00-${traceId}-${clientSpan}-01` },
      body: JSON.stringify({
        batch: [
          { type: 'page', messageId: randomUUID(), timestamp: at, anonymousId, context: { campaign: { source: 'facebook', fbclid: 'IwAR-traced-click' } } },
          { type: 'track', event: 'purchase', messageId: randomUUID(), timestamp: at, anonymousId, properties: { value: 10, currency: 'EUR', order_id: `ord-${randomUUID()}` } },
        ],
      }),
    });
    expect(await res.json()).toMatchObject({ success: true, processed: 2 });

    const trace = (): ExportedSpan[] => collector.spans.filter((s) => s.traceId === traceId);
    const one = (kind: number, name: string | RegExp) => trace().find((s) => s.kind === kind && (typeof name === 'string' ? s.name === name : name.test(s.name)));
    const deadline = Date.now() + 60_000;
    while (!one(CLIENT, 'deliver meta')) {
      if (Date.now() > deadline) throw new Error(`no delivery span within 60 s; the trace holds: ${JSON.stringify(trace().map((s) => s.name))}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const request = one(SERVER, 'POST /functions/v1/v1-batch');
    const resolution = one(CONSUMER, `${topics.eventsRaw.name} process`);
    const candidate = one(CONSUMER, `${topics.conversionsCandidates.name} process`);
    const delivery = one(CLIENT, 'deliver meta');
    expect(request).toMatchObject({ parentSpanId: clientSpan, service: 'svc-standalone', attributes: { 'http.route': '/functions/v1/v1-batch', 'http.response.status_code': 200, 'svc.events.accepted': 2 } });
    expect(resolution).toMatchObject({ parentSpanId: request!.spanId, scope: 'identity-resolver', attributes: { 'messaging.batch.message_count': 2 } });
    expect(candidate).toMatchObject({ parentSpanId: resolution!.spanId, scope: 'conversion-forwarder', attributes: { 'messaging.batch.message_count': 1 } });
    expect(delivery).toMatchObject({ parentSpanId: candidate!.spanId, scope: 'conversion-forwarder', status: 0, attributes: { 'svc.platform': 'meta', 'svc.outcome': 'sent', 'http.response.status_code': 200 } });
  }, 90_000);

  it('the context rides in the headers of the raw log’s and the candidates’ messages, on this tier', async () => {
    for (const topic of [topics.eventsRaw, topics.conversionsCandidates]) {
      const headers: Array<Record<string, string>> = [];
      await readToEnd(running.bus, topic, async (messages) => void headers.push(...messages.map((m) => m.headers)));
      expect(headers.length).toBeGreaterThan(0);
      for (const h of headers) expect(h[TRACEPARENT_HEADER]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    }
  }, 60_000);
}

describeWithOtelCollector('traces end to end', () => {
  describeWithPostgres('Postgres-backed log', () => traceSuite('postgres-log'));
  describeWithKafka('Kafka', () => traceSuite('kafka'));
});
