import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { Parser } from '@asyncapi/parser';
import { Topics, deadLetterTopicName } from '@svc/contracts';
import { buildAsyncApiDocument } from './asyncapi';

/**
 * The AsyncAPI document of the topics: valid by the AsyncAPI parser (no
 * errors), committed as generated, and complete (every topic of
 * libs/contracts with its key, schema and registry subject, and its
 * dead-letter topic with the headers a parked message carries).
 */
const document = buildAsyncApiDocument();
const channels = document.channels as Record<string, { address: string; messages: Record<string, { $ref: string }> }>;
const messages = (document.components as { messages: Record<string, Record<string, unknown>> }).messages;

describe('the AsyncAPI document', () => {
  it('is valid AsyncAPI 3: the parser reports no error', async () => {
    const { document: parsed, diagnostics } = await new Parser().parse(JSON.stringify(document));
    const errors = diagnostics.filter((d) => d.severity === 0);
    expect(errors.map((d) => `${d.path.join('.')}: ${d.message}`)).toEqual([]);
    expect(parsed?.channels().all().map((c) => c.address()).sort()).toEqual(
      Object.values(Topics)
        .flatMap((t) => [t.name, deadLetterTopicName(t.name)])
        .sort(),
    );
  });

  it('is committed as generated (run `npm run openapi` after changing a topic or its schema)', () => {
    expect(JSON.parse(readFileSync(path.join(__dirname, '..', 'asyncapi.json'), 'utf8'))).toEqual(document);
  });

  it.each(Object.entries(Topics))('%s: its key, value schema and registry subject', (key, topic) => {
    const channel = channels[key]!;
    expect(channel.address).toBe(topic.name);
    const message = messages[Object.keys(channel.messages)[0]!]!;
    expect(message['x-registry-subject']).toBe(`${topic.name}-value`);
    expect((message.bindings as { kafka: { key: { description: string } } }).kafka.key.description.length).toBeGreaterThan(5);
    expect(message.payload).toEqual({ $ref: expect.stringMatching(/^#\/components\/schemas\//) });
  });

  it('the dead-letter topics carry why and where from', () => {
    expect(Object.keys((messages.DeadLetter!.headers as { properties: object }).properties)).toEqual(['x-dlq-reason', 'x-dlq-source']);
  });
});
