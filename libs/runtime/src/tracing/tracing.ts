import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, defaultTextMapGetter, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { env, type ConfigValues } from '../config/config';
import type { Logger } from '../logging';

/**
 * OpenTelemetry traces, off unless OTEL_EXPORTER_OTLP_ENDPOINT names a
 * collector (OTLP over HTTP). A request is followed from the gateway's span
 * through the bus (the W3C `traceparent` of the span that produced a message
 * rides in the message's headers, on both tiers) into the resolver's and the
 * forwarder's spans, each a child of the span that caused it. Off, nothing is
 * recorded, no message carries a header, and callers skip their span work
 * (`enabled`). No global provider and no context manager: spans are passed
 * explicitly, so nothing patches modules or follows every async call.
 */

export const tracingConfigSpec = {
  OTEL_EXPORTER_OTLP_ENDPOINT: env.url({
    description: 'OTLP/HTTP endpoint of an OpenTelemetry collector (http://collector:4318): traces go to <it>/v1/traces. Unset: no tracing',
    default: undefined,
  }),
  OTEL_EXPORTER_OTLP_HEADERS: env.optionalString({
    description: 'Headers sent with every export, as name=value pairs separated by commas (a managed backend’s key)',
    secret: true,
  }),
  TRACE_SAMPLE_PERCENT: env.int({
    description: 'Share of the traces begun here that are recorded, in percent (a request that arrives with a traceparent keeps its caller’s decision)',
    default: 100,
    min: 0,
    max: 100,
  }),
};
export type TracingConfig = ConfigValues<typeof tracingConfigSpec>;

/** The header (and outbox column) a message's trace context travels in. */
export const TRACEPARENT_HEADER = 'traceparent';

export interface Tracing {
  /** False: no exporter. Spans are no-ops; callers skip their span work and add no headers. */
  readonly enabled: boolean;
  /** A tracer named for one part of the process (a service: the spans' instrumentation scope). */
  tracer(scope: string): Tracer;
  /** Exports what is left, then stops. */
  shutdown(): Promise<void>;
}

/** No tracing: what a process without OTEL_EXPORTER_OTLP_ENDPOINT has. */
export const NO_TRACING: Tracing = {
  enabled: false,
  tracer: (scope) => trace.getTracer(scope),
  shutdown: async () => undefined,
};

/** Tracing for a process whose spans name it `serviceName`, exporting to the configured collector (else NO_TRACING). */
export function startTracing(serviceName: string, version: string, config: TracingConfig, logger: Logger): Tracing {
  if (!config.OTEL_EXPORTER_OTLP_ENDPOINT) return NO_TRACING;
  const exporter = new OtlpHttpExporter(`${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`, exportHeaders(config.OTEL_EXPORTER_OTLP_HEADERS), logger);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName, 'service.version': version }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.TRACE_SAMPLE_PERCENT / 100) }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1_000 })],
  });
  return {
    enabled: true,
    tracer: (scope) => provider.getTracer(scope, version),
    shutdown: () => provider.shutdown(),
  };
}

/**
 * OTLP/HTTP with protobuf bodies: the spans the batch processor hands over,
 * serialised by OpenTelemetry's own serializer and posted with fetch. (The
 * SDK's exporter loads node:http with a dynamic import, which a test runner's
 * module sandbox refuses.) A failed export drops its spans and says why once
 * per minute: tracing never holds up or fails the work it describes.
 */
class OtlpHttpExporter implements SpanExporter {
  private readonly pending = new Set<Promise<unknown>>();
  private lastComplaint = 0;

  constructor(
    private readonly url: string,
    private readonly headers: Record<string, string>,
    private readonly logger: Logger,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const body = ProtobufTraceSerializer.serializeRequest(spans);
    if (!body) return done({ code: ExportResultCode.FAILED, error: new Error('spans could not be serialised') });
    const sent = fetch(this.url, {
      method: 'POST',
      headers: { ...this.headers, 'content-type': 'application/x-protobuf' },
      body,
      signal: AbortSignal.timeout(10_000),
    }).then(
      async (res) => {
        await res.arrayBuffer();
        if (!res.ok) throw new Error(`the collector answered ${res.status}`);
        done({ code: ExportResultCode.SUCCESS });
      },
    ).catch((err: unknown) => {
      const error = err instanceof Error ? err : new Error(String(err));
      if (Date.now() - this.lastComplaint > 60_000) {
        this.lastComplaint = Date.now();
        this.logger.warn({ err: error, url: this.url }, 'tracing: export to the collector failed; those spans are dropped');
      }
      done({ code: ExportResultCode.FAILED, error });
    });
    this.pending.add(sent);
    void sent.finally(() => this.pending.delete(sent));
  }

  async forceFlush(): Promise<void> {
    await Promise.all(this.pending);
  }

  shutdown(): Promise<void> {
    return this.forceFlush();
  }
}

function exportHeaders(raw: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (raw ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}

const propagator = new W3CTraceContextPropagator();

/** The context a `traceparent` names (a remote parent), or the root when there is none or it is malformed. */
export function parentContext(traceparent: string | undefined): Context {
  if (!traceparent) return ROOT_CONTEXT;
  return propagator.extract(ROOT_CONTEXT, { [TRACEPARENT_HEADER]: traceparent }, defaultTextMapGetter);
}

/** The W3C traceparent of a span, for the messages it produces; undefined for a no-op span. */
export function traceparentOf(span: Span | undefined): string | undefined {
  const c = span?.spanContext();
  if (!c || !trace.isSpanContextValid(c)) return undefined;
  return `00-${c.traceId}-${c.spanId}-${(c.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? '01' : '00'}`;
}

/**
 * Runs a consumer's work on a batch of messages of `topic` inside spans
 * (`<topic> process`): one per distinct trace context the messages carry,
 * each a child of it (a batch mixes requests; every request's trace gets the
 * part of the batch that was its own), plus one root span for messages
 * without one; all end when the work does, failed if it throws. The work is
 * handed each message's span's traceparent, for what it writes on. Without
 * a tracer (tracing off) it just runs the work.
 */
export async function inConsumerSpans<M extends { headers: Record<string, string> }, T>(
  tracer: Tracer | undefined,
  topic: string,
  messages: readonly M[],
  work: (traceparentOf?: (message: M) => string | undefined) => Promise<T>,
): Promise<T> {
  if (!tracer) return work();
  const spans = consumerSpans(tracer, `${topic} process`, messages, { 'messaging.destination.name': topic });
  let result: T;
  try {
    result = await work((m) => traceparentOf(spans.spanOf(m)));
  } catch (err) {
    spans.end(err);
    throw err;
  }
  spans.end();
  return result;
}

function consumerSpans<M extends { headers: Record<string, string> }>(
  tracer: Tracer,
  name: string,
  messages: readonly M[],
  attributes: Record<string, string | number>,
): { spanOf(message: M): Span; end(error?: unknown): void } {
  const spans = new Map<string, Span>();
  const counts = new Map<Span, number>();
  const byMessage = new Map<M, Span>();
  for (const m of messages) {
    const parent = m.headers[TRACEPARENT_HEADER] ?? '';
    let span = spans.get(parent);
    if (!span) {
      span = tracer.startSpan(name, { kind: SpanKind.CONSUMER, attributes }, parentContext(parent));
      spans.set(parent, span);
    }
    counts.set(span, (counts.get(span) ?? 0) + 1);
    byMessage.set(m, span);
  }
  return {
    spanOf: (m) => byMessage.get(m)!,
    end(error) {
      for (const [span, n] of counts) {
        span.setAttribute('messaging.batch.message_count', n);
        if (error !== undefined) {
          span.recordException(error instanceof Error ? error : String(error));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      }
    },
  };
}
