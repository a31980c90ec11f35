import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '@svc/runtime';
import { waitFor } from './wait-for';

/**
 * A real OpenTelemetry Collector for the trace tests and the tracing bench:
 * infra/observability/install-otelcol.sh builds it from the collector's Go
 * modules (.ci/run does; cached). It receives OTLP/HTTP from the services
 * and exports what it received, batched, as OTLP/JSON to a sink in this
 * process, which keeps every span it is handed. (No jest here: the benches
 * start it too; the suite wrapper is in programs.ts.)
 */
export const OTELCOL_INSTALL = path.resolve(__dirname, '../../../infra/observability/install-otelcol.sh');

/** The collector's binary, if built. */
export function otelCollectorBinary(): string | undefined {
  try {
    return execFileSync('bash', [OTELCOL_INSTALL, '--if-installed'], { encoding: 'utf8' }).trim().split('\n').pop();
  } catch {
    return undefined;
  }
}

/** A span as the collector exported it (OTLP/JSON), with its resource's and scope's names. */
export interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's numbering: 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  service: string;
  scope: string;
  attributes: Record<string, string | number | boolean>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number;
}

export interface RunningOtelCollector {
  /** What a service's OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
  endpoint: string;
  /** Every span the collector has exported so far. */
  readonly spans: readonly ExportedSpan[];
  /** The collector's process id (a bench counts its CPU). */
  pid: number;
  stop(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpJson {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: OtlpValue }> };
    scopeSpans?: Array<{
      scope?: { name?: string };
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: Array<{ key: string; value: OtlpValue }>;
        status?: { code?: number };
      }>;
    }>;
  }>;
}

const valueOf = (v: OtlpValue): string | number | boolean => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.boolValue ?? ''));
const attributesOf = (list: Array<{ key: string; value: OtlpValue }> = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

function spansOf(body: OtlpJson): ExportedSpan[] {
  return (body.resourceSpans ?? []).flatMap((r) => {
    const service = String(attributesOf(r.resource?.attributes)['service.name'] ?? '');
    return (r.scopeSpans ?? []).flatMap((s) =>
      (s.spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        name: span.name,
        kind: span.kind ?? 0,
        service,
        scope: s.scope?.name ?? '',
        attributes: attributesOf(span.attributes),
        status: span.status?.code ?? 0,
      })),
    );
  });
}

/** Starts the collector (built already: see otelCollectorBinary) and its sink on loopback. */
export async function startOtelCollector(): Promise<RunningOtelCollector> {
  const binary = otelCollectorBinary();
  if (!binary) throw new Error(`the OpenTelemetry Collector is not built: run ${OTELCOL_INSTALL}`);
  const spans: ExportedSpan[] = [];
  const sink: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') spans.push(...spansOf(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpJson));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-otelcol-'));
  const config = path.join(dir, 'config.yaml');
  writeFileSync(
    config,
    `receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${port}
processors:
  batch:
    timeout: 100ms
exporters:
  otlphttp:
    endpoint: http://127.0.0.1:${(sink.address() as AddressInfo).port}
    encoding: json
    compression: none
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlphttp]
`,
  );
  const child: ChildProcess = spawn(binary, ['--config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (c: Buffer) => (log = (log + c.toString('utf8')).slice(-8_000)));
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    await new Promise((resolve) => sink.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // Up when its receiver answers (an empty export is accepted).
    await waitFor('the OpenTelemetry Collector', async () => {
      if (child.exitCode !== null) throw new Error(`the collector exited (${child.exitCode}): ${log}`);
      const res = await fetch(`${endpoint}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).catch(() => undefined);
      return res?.ok === true;
    }, 30_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { endpoint, spans, pid: child.pid!, stop };
}
