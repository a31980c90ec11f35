import { describe, expect, it } from '@jest/globals';
import { Topics, deadLetterTopicName } from './topics';
import { validatorFor, firstSchemaError } from './schema-validator';

const orgId = '6f1c7c2e-8b9a-4d51-9d1e-2a3b4c5d6e7f';

describe('topic payload schemas', () => {
  it('every topic has a versioned schema that compiles', () => {
    for (const topic of Object.values(Topics)) {
      expect(topic.schema.$id).toMatch(new RegExp(`^${topic.name.replace('.', '\\.')}/v\\d+$`));
      expect(typeof validatorFor(topic.schema)).toBe('function');
      expect(topic.partitions).toBeGreaterThan(0);
    }
  });

  it('accepts a well-formed raw envelope and names the failing field of a bad one', () => {
    const envelope = {
      v: 1,
      orgId,
      receivedAt: '2026-11-20T10:00:00.000Z',
      requestId: 'r-1',
      clientIp: '127.0.0.1',
      event: { type: 'page', messageId: 'm', anonymousId: 'a', timestamp: '2026-11-20T10:00:00Z' },
    };
    expect(validatorFor(Topics.eventsRaw.schema)(envelope)).toBe(true);
    expect(firstSchemaError(Topics.eventsRaw.schema, { ...envelope, orgId: 'x' })).toMatch(/^\/orgId /);
  });

  it('names dead-letter topics after their source', () => {
    expect(deadLetterTopicName('events.raw')).toBe('events.raw.dlq');
  });
});
