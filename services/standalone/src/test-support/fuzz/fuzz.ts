import fc from 'fast-check';
import { Messages, checkEvent } from '@svc/contracts';
import { buildOpenApiDocument, createResponseChecker } from '@svc/openapi';
import { rawRequest, type RawResponse } from './raw-http';
import { fuzzRequest, type FuzzRequest, type FuzzTargets, type RouteKind } from './requests';

export interface FuzzOptions {
  /** Requests in all. */
  requests: number;
  seed: number;
  /** Stops sending (and reports what it sent) once this much time has passed. */
  maxMs: number;
  /** Requests in flight at once. */
  concurrency: number;
}

export interface Violation {
  rule: 'server_error' | 'leak' | 'envelope' | 'headers' | 'batch_count' | 'no_answer' | 'undocumented';
  detail: string;
  request: string;
}

export interface FuzzReport {
  requests: number;
  seconds: number;
  byStatus: Record<string, number>;
  byKind: Record<RouteKind, number>;
  serverErrors: number;
  leaks: number;
  violations: Violation[];
  /** Per organisation, the messageIds (as normalised by the gateway) of every event a 200 acknowledged. */
  acknowledged: Map<string, Set<string>>;
}

/**
 * Text that only a raw database, driver or runtime error would put in a
 * response. Every client-facing message is a catalogue string, so none of
 * these may ever appear in a body.
 */
const LEAK = /SQLSTATE|syntax error at|relation "|column "|violates|duplicate key|invalid input syntax|unterminated|knex|\bpg_|node_modules|\bat (async |Object\.)|TypeError|RangeError|ReferenceError|Cannot read prop|is not a function|ECONNREFUSED|stack depth/i;

/** Every answer must be the OpenAPI document's for its route and status (libs/openapi). */
const documented = createResponseChecker(buildOpenApiDocument());

/** Answers of Node's HTTP parser, before any route (docs/architecture.md, HTTP scaffolding): no operation of the document can own them. */
const PARSER_ANSWERS: ReadonlySet<unknown> = new Set([Messages.malformedRequest, Messages.headersTooLarge, Messages.requestTimeout]);

/**
 * Sends `requests` generated requests (fixed seed, so a run is repeatable)
 * to the stack on `port`, `concurrency` at a time, and checks each answer:
 * never a 5xx, the spec's headers, the envelope on every error, no raw
 * error text, and for a batch, `processed` equal to the events the shared
 * per-event check accepts. Returns the figures and every violation, with
 * the request that caused it.
 */
export async function runFuzz(port: number, targets: readonly FuzzTargets[], options: FuzzOptions): Promise<FuzzReport> {
  const report: FuzzReport = {
    requests: 0,
    seconds: 0,
    byStatus: {},
    byKind: { batch: 0, consent: 0, profiles: 0, merge: 0, other: 0 },
    serverErrors: 0,
    leaks: 0,
    violations: [],
    acknowledged: new Map(targets.map((t) => [t.orgId, new Set<string>()])),
  };
  const started = Date.now();
  const arbitrary = fc.constantFrom(...targets).chain(fuzzRequest);
  // fast-check draws values in chunks from one seeded stream: the same seed gives the same requests.
  const CHUNK = 200;
  for (let sent = 0, chunk = 0; sent < options.requests && Date.now() - started < options.maxMs; chunk++) {
    const requests = fc.sample(arbitrary, { seed: options.seed + chunk, numRuns: Math.min(CHUNK, options.requests - sent) });
    let next = 0;
    await Promise.all(
      Array.from({ length: options.concurrency }, async () => {
        for (let i = next++; i < requests.length && Date.now() - started < options.maxMs; i = next++) {
          const request = requests[i] as FuzzRequest;
          await check(port, request, report);
        }
      }),
    );
    sent += requests.length;
  }
  report.seconds = (Date.now() - started) / 1000;
  return report;
}

async function check(port: number, request: FuzzRequest, report: FuzzReport): Promise<void> {
  report.requests++;
  report.byKind[request.kind]++;
  let res: RawResponse;
  try {
    res = await rawRequest(port, request);
  } catch (err) {
    report.violations.push({ rule: 'no_answer', detail: (err as Error).message, request: describe(request) });
    return;
  }
  report.byStatus[res.status] = (report.byStatus[res.status] ?? 0) + 1;
  const violation = (rule: Violation['rule'], detail: string) => report.violations.push({ rule, detail, request: describe(request) });

  if (res.status >= 500) {
    report.serverErrors++;
    violation('server_error', `${res.status} ${res.body.slice(0, 300)}`);
  }
  // Error bodies only: a 2xx carries stored client data back, and clients may send any text.
  if (res.status >= 400 && LEAK.test(res.body)) {
    report.leaks++;
    violation('leak', res.body.slice(0, 300));
  }
  if (res.headers['api-version'] !== '1' || !res.headers['x-request-id']) violation('headers', JSON.stringify(res.headers));
  if (request.method === 'HEAD' || res.status === 204) return;

  let body: Record<string, unknown>;
  try {
    body = JSON.parse(res.body) as Record<string, unknown>;
  } catch {
    violation('envelope', `not JSON: ${res.body.slice(0, 200)}`);
    return;
  }
  if (!PARSER_ANSWERS.has(body.error)) {
    const target = request.target.toString('latin1');
    for (const problem of documented({ method: request.method, path: target, status: res.status, contentType: res.headers['content-type'], body: res.body })) violation('undocumented', problem);
  }
  if (res.status >= 400) {
    // The per-organisation 429 alone carries only `error`, as the spec says.
    if (typeof body.error !== 'string' || (body.success !== false && !(res.status === 429 && body.success === undefined))) {
      violation('envelope', `${res.status} ${res.body.slice(0, 200)}`);
    }
    return;
  }
  if (request.kind === 'batch' && request.sentBatch && res.status === 200) {
    const accepted = request.sentBatch.flatMap((e) => {
      const checked = checkEvent(e);
      return checked.ok ? [checked.event.messageId] : [];
    });
    if (body.processed !== accepted.length || body.failed !== request.sentBatch.length - accepted.length) {
      violation('batch_count', `expected processed ${accepted.length} of ${request.sentBatch.length}, got ${res.body.slice(0, 300)}`);
    }
    if (body.processed === accepted.length) for (const id of accepted) report.acknowledged.get(request.orgId)?.add(id);
  }
}

/** The request in a form one can paste into a reproduction. */
function describe(r: FuzzRequest): string {
  const body = r.body ? ` body=${JSON.stringify(r.body.subarray(0, 300).toString('latin1'))}${r.body.length > 300 ? `…(${r.body.length} bytes)` : ''}` : '';
  return `${r.method} ${JSON.stringify(r.target.toString('latin1'))} headers=${JSON.stringify(r.headers)}${body}`;
}
