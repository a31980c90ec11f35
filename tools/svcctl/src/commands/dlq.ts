import { DLQ_REASON_HEADER, DLQ_SOURCE_HEADER, deadLetterTopicFor, readToEnd, type Bus, type IncomingMessage } from '@svc/bus';
import { Topics, type TopicSpec } from '@svc/contracts';
import { ValidationError } from '@svc/runtime';
import { Verbatim, integer, type CliContext, type Command, type Values } from '../command';

/**
 * Dead-letter topics: `<topic>.dlq` holds what a consumer could not handle
 * (a value its schema refuses, or an event the resolver proved bad), with
 * the original key, value and headers plus `x-dlq-reason` and
 * `x-dlq-source`. `list` shows them; `redrive` puts them back on their
 * topic after a fix. Consumers de-duplicate (the resolver on messageId, the
 * forwarder per conversion), so a message redriven twice is stored once.
 */
export const dlqCommands: Record<string, Command> = {
  'dlq list': {
    usage: 'dlq list --topic <topic> [--since <ISO time>] [--limit <n>]',
    summary: 'List the events a dead-letter topic holds, with why each was parked',
    flags: { required: ['topic'], optional: ['since', 'limit'] },
    async run(v, ctx) {
      const { bus, dlq, since } = await open(v, ctx);
      const limit = v.limit === undefined ? 100 : integer('limit', v.limit, 1);
      const parked = await deadLettered(bus, dlq, since);
      return { topic: dlq.name, count: parked.length, messages: parked.slice(0, limit).map(describe) };
    },
  },
  'dlq redrive': {
    usage: 'dlq redrive --topic <topic> [--since <ISO time>]',
    summary: `Put a dead-letter topic's events back on their topic`,
    flags: { required: ['topic'], optional: ['since'] },
    async run(v, ctx) {
      const { bus, source, dlq, since } = await open(v, ctx);
      const parked = await deadLettered(bus, dlq, since);
      const refused: Array<{ dlqOffset: string; reason: string }> = [];
      let redriven = 0;
      // One message per call: a message the topic still refuses is reported, and the others go on.
      for (const m of parked) {
        const failure = Buffer.isBuffer(m.value) ? 'the value is not JSON: it cannot be put back' : await produceBack(bus, source, m);
        if (failure === undefined) redriven++;
        else refused.push({ dlqOffset: `${m.partition}/${m.offset}`, reason: failure });
      }
      return { topic: source.name, from: dlq.name, redriven, refused };
    },
  },
};

async function open(v: Values, ctx: CliContext): Promise<{ bus: Bus; source: TopicSpec; dlq: TopicSpec; since: Date | undefined }> {
  const { bus, topics } = await ctx.bus();
  // By its name, with or without the deployment's TOPIC_PREFIX.
  const name = (Object.keys(Topics) as Array<keyof typeof Topics>).find((k) => Topics[k].name === v.topic || topics[k].name === v.topic);
  if (!name) throw new ValidationError(`--topic must be one of ${Object.values(Topics).map((t) => t.name).join(', ')} (got ${JSON.stringify(v.topic)})`);
  const source = topics[name];
  const since = v.since === undefined ? undefined : new Date(v.since);
  if (since && Number.isNaN(since.getTime())) throw new ValidationError(`--since must be an ISO 8601 time (got ${JSON.stringify(v.since)})`);
  const dlq = deadLetterTopicFor(source);
  // Reading a dead-letter topic nothing has written to yet: it exists, empty, rather than failing.
  await bus.ensureTopics([dlq]);
  return { bus, source, dlq, since };
}

async function deadLettered(bus: Bus, dlq: TopicSpec, since: Date | undefined): Promise<Array<IncomingMessage<unknown>>> {
  const parked: Array<IncomingMessage<unknown>> = [];
  await readToEnd<unknown>(bus, dlq, async (messages) => {
    for (const m of messages) if (!since || m.timestamp >= since) parked.push(m);
  });
  return parked.sort((a, b) => a.timestamp.getTime() - b.timestamp.getTime() || a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
}

/** Stores the message on its topic again, as it first came (its dead-letter headers dropped); why not, when it is refused. */
async function produceBack(bus: Bus, source: TopicSpec, m: IncomingMessage<unknown>): Promise<string | undefined> {
  const headers = Object.fromEntries(Object.entries(m.headers).filter(([name]) => name !== DLQ_REASON_HEADER && name !== DLQ_SOURCE_HEADER));
  try {
    const [result] = await bus.produce(source, [{ key: m.key, value: m.value, headers }]);
    return result?.ok ? undefined : (result?.error.message ?? 'no result');
  } catch (err) {
    // A value the topic's schema still refuses: report it; the log being down ends the command.
    if ((err as Error).name === 'SchemaViolationError') return (err as Error).message;
    throw err;
  }
}

function describe(m: IncomingMessage<unknown>) {
  return {
    partition: m.partition,
    offset: m.offset,
    deadLetteredAt: m.timestamp.toISOString(),
    key: m.key,
    reason: m.headers[DLQ_REASON_HEADER] ?? null,
    source: m.headers[DLQ_SOURCE_HEADER] ?? null,
    value: new Verbatim(Buffer.isBuffer(m.value) ? { base64: m.value.toString('base64') } : m.value),
  };
}
