/**
 * The fixture origin of the end-to-end suites, on 127.0.0.1: it serves the
 * pages and the bundle, and relays /functions/v1/* to the stack, so that a
 * page posting to its own origin reaches the real gateway. It records every
 * batch request and loses the ones a test chooses, the way a network does.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FixtureOrigin, loseAnswer, requestBody } from '@svc/testkit';

/** Where a chosen batch request is lost: before it reaches the stack, or after the stack has answered (its answer is lost). */
export type Loss = 'before the stack' | 'after the stack';

export interface RelayedBatch {
  messageIds: string[];
  /** Names of the events (track name, else type). */
  names: string[];
  /** The stack's answer as relayed; 0 when the page got none. */
  status: number;
  lost?: Loss;
  /** Sent by sendBeacon to the Segment-compatible route (the fallback where fetch has no keepalive). */
  beacon?: true;
}

const RELAYED_HEADERS = ['content-type', 'authorization', 'origin', 'x-request-id'];

export class FixtureRelay extends FixtureOrigin {
  readonly batches: RelayedBatch[] = [];
  private losses: Loss[] = [];

  constructor(private readonly upstream: string) {
    super();
  }

  /** Forgets the batches recorded and the losses not yet made. */
  reset(): void {
    this.batches.length = 0;
    this.losses = [];
  }

  /** Loses the next batch request, at `where`. */
  lose(where: Loss): void {
    this.losses.push(where);
  }

  protected batchesSeen(): unknown {
    return this.batches;
  }

  protected async handle(req: IncomingMessage, res: ServerResponse, at: string): Promise<void> {
    if (at.startsWith('/functions/v1/')) return this.relay(req, res, at);
    if (at === '/favicon.ico') {
      res.writeHead(204);
      res.end();
      return;
    }
    this.servePage(req, res, at);
  }

  private async relay(req: IncomingMessage, res: ServerResponse, at: string): Promise<void> {
    const body = await requestBody(req);
    const beacon = at.endsWith('/segment/v1/batch');
    const batch = (at.endsWith('/v1-batch') || beacon) && req.method === 'POST' ? batchOf(body) : undefined;
    const lost = batch ? this.losses.shift() : undefined;
    const record: RelayedBatch | undefined = batch && { ...batch, status: 0, ...(lost ? { lost } : {}), ...(beacon ? { beacon: true as const } : {}) };
    if (record) this.batches.push(record);
    if (lost === 'before the stack') return loseAnswer(res);
    const headers: Record<string, string> = {};
    for (const name of RELAYED_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const answer = await fetch(`${this.upstream}${at}`, { method: req.method ?? 'GET', headers, ...(body.length ? { body } : {}) });
    const text = await answer.text();
    if (lost === 'after the stack') return loseAnswer(res);
    if (record) record.status = answer.status;
    res.writeHead(answer.status, { 'Content-Type': answer.headers.get('content-type') ?? 'application/json' });
    res.end(text);
  }
}

function batchOf(body: Buffer): Pick<RelayedBatch, 'messageIds' | 'names'> {
  let events: Array<{ messageId?: string; event?: string; type?: string }> = [];
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { batch?: unknown };
    if (Array.isArray(parsed.batch)) events = parsed.batch as typeof events;
  } catch {
    // not JSON: recorded with no events
  }
  return { messageIds: events.map((e) => String(e.messageId)), names: events.map((e) => String(e.event ?? e.type)) };
}
