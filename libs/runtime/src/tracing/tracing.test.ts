import { describe, expect, it } from '@jest/globals';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NO_TRACING, TRACEPARENT_HEADER, inConsumerSpans, parentContext, traceparentOf } from './tracing';
import { trace } from '@opentelemetry/api';

const recorded = () => {
  const exporter = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test');
  return { tracer, finished: () => exporter.getFinishedSpans() };
};
const TRACE = '0af7651916cd43dd8448eb211c80319c';

describe('trace context in messages', () => {
  it.each([
    ['a sampled parent', `00-${TRACE}-b7ad6b7169203331-01`, true],
    ['an unsampled one', `00-${TRACE}-b7ad6b7169203331-00`, true],
    ['a malformed one', `00-${TRACE}-nothex-01`, false],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-b7ad6b7169203331-01`, false],
    ['none', undefined, false],
  ])('%s: a child span joins it only when it is valid', (_, traceparent, joins) => {
    const { tracer } = recorded();
    const span = tracer.startSpan('child', {}, parentContext(traceparent));
    const written = traceparentOf(span)!;
    expect(written).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    expect(written.slice(3, 35) === TRACE).toBe(joins);
  });

  it('a no-op span (tracing off) gives no traceparent, so no message carries a header', () => {
    expect(traceparentOf(NO_TRACING.tracer('x').startSpan('off'))).toBeUndefined();
    expect(traceparentOf(undefined)).toBeUndefined();
    expect(NO_TRACING.enabled).toBe(false);
  });

  it('a batch gets one consumer span per trace context its messages carry, each the child of it, failed when the work throws', async () => {
    const { tracer, finished } = recorded();
    const a = `00-${TRACE}-00f067aa0ba902b7-01`;
    const b = `00-${'1'.repeat(32)}-00f067aa0ba902b8-01`;
    const messages: Array<{ headers: Record<string, string> }> = [{ headers: { [TRACEPARENT_HEADER]: a } }, { headers: { [TRACEPARENT_HEADER]: b } }, { headers: { [TRACEPARENT_HEADER]: a } }, { headers: {} }];
    let handed: Array<string | undefined> = [];
    await expect(
      inConsumerSpans(tracer, 'events.raw', messages, async (traceOf) => {
        handed = messages.map((m) => traceOf?.(m));
        throw new Error('the batch failed');
      }),
    ).rejects.toThrow('the batch failed');
    // The messages of one trace share a span; each trace its own.
    expect(handed[0]).toBe(handed[2]);
    expect(new Set(handed).size).toBe(3);
    expect(handed[0]!.slice(3, 35)).toBe(TRACE);
    const byParent = new Map(finished().map((s) => [s.parentSpanContext?.spanId ?? 'root', s]));
    expect(finished()).toHaveLength(3);
    expect([...byParent.keys()].sort()).toEqual(['00f067aa0ba902b7', '00f067aa0ba902b8', 'root']);
    expect(finished().map((s) => s.attributes['messaging.batch.message_count']).sort()).toEqual([1, 1, 2]);
    expect(finished().map((s) => s.name)).toEqual(['events.raw process', 'events.raw process', 'events.raw process']);
    for (const s of finished()) expect(s.status.code).toBe(2);
    expect(trace.isSpanContextValid(byParent.get('root')!.spanContext())).toBe(true);
  });
});

describe('inConsumerSpans without a tracer (tracing off)', () => {
  it('runs the work alone, handing it no traceparents', async () => {
    expect(await inConsumerSpans(undefined, 'events.raw', [{ headers: {} }], async (traceOf) => traceOf)).toBeUndefined();
  });
});
