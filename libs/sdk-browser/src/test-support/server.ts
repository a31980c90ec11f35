/**
 * A tiny HTTP server on 127.0.0.1 for the browser tests: it serves the
 * script-tag build and HTML fixture pages, and captures what the library sends
 * to /functions/v1/v1-batch and /functions/v1/v1-consent, answering with
 * scripted replies or dropping the request.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { FixtureOrigin, loseAnswer, requestBody } from '@svc/testkit';

export interface Captured {
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body. */
  body: Record<string, unknown>;
  bytes: number;
  /** Status the server answered with; 0 when the request was dropped. */
  status: number;
  at: number;
}

export interface ScriptedReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A batch request the network loses: the client sees a network error. */
export const DROP = 'drop';

type Event = Record<string, unknown> & { messageId: string; type: string; event?: string; context: Record<string, unknown> };

export class CaptureServer extends FixtureOrigin {
  readonly batches: Captured[] = [];
  readonly consents: Captured[] = [];
  private script: Array<ScriptedReply | typeof DROP> = [];
  /** Answer used once the script runs out; default 200 with a success body. */
  fallback: ScriptedReply | undefined;

  /** Replies to use, in order, for the next batch requests. */
  reply(...replies: Array<ScriptedReply | typeof DROP>): void {
    this.script.push(...replies);
  }

  reset(): void {
    this.batches.length = 0;
    this.consents.length = 0;
    this.script = [];
    this.fallback = undefined;
  }

  /** Every event of every batch request, answered or not, in arrival order. */
  events(filter?: (e: Event) => boolean): Event[] {
    const all = this.batches.flatMap((b) => (Array.isArray(b.body.batch) ? (b.body.batch as Event[]) : []));
    return filter ? all.filter(filter) : all;
  }

  /** Events of batch requests answered with 2xx. */
  delivered(filter?: (e: Event) => boolean): Event[] {
    const all = this.batches.filter((b) => b.status >= 200 && b.status < 300).flatMap((b) => (Array.isArray(b.body.batch) ? (b.body.batch as Event[]) : []));
    return filter ? all.filter(filter) : all;
  }

  protected batchesSeen(): unknown {
    return this.batches.map((b) => [b.status, Array.isArray(b.body.batch) ? (b.body.batch as Event[]).map((e) => e.event ?? e.type) : b.body]);
  }

  protected async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    if (req.method === 'POST' && (path === '/functions/v1/v1-batch' || path === '/functions/v1/v1-consent')) {
      const raw = await requestBody(req);
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        body = { unparsable: raw.toString('utf8') };
      }
      const isBatch = path.endsWith('v1-batch');
      const count = Array.isArray(body.batch) ? body.batch.length : 0;
      const reply = (isBatch ? this.script.shift() : undefined) ??
        this.fallback ?? { status: 200, body: isBatch ? { success: true, processed: count, failed: 0, duration_ms: 1 } : { success: true } };
      const status = reply === DROP ? 0 : reply.status;
      (isBatch ? this.batches : this.consents).push({ path, headers: req.headers, body, bytes: raw.length, status, at: Date.now() });
      if (reply === DROP) return loseAnswer(res);
      res.writeHead(reply.status, { 'Content-Type': 'application/json', ...reply.headers });
      res.end(JSON.stringify(reply.body ?? { success: reply.status < 300 }));
      return;
    }
    this.servePage(req, res, path);
  }
}
