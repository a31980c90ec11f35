import { describe, expect, it } from '@jest/globals';
import { PROFILE_CHANGE_KINDS, ProfileChangeSchema, Topics, deadLetterTopicName } from './topics';
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

  it('profiles.changes lists every change kind for consumers, unmerged with the profile it was split from', () => {
    const change = ProfileChangeSchema.properties.change as { description: string; examples: string[] };
    expect(change.examples).toEqual(['created', 'updated', 'merged', 'unmerged']);
    for (const kind of PROFILE_CHANGE_KINDS) expect(change.description).toContain(kind);
    const unmerged = { v: 1, orgId, profileId: orgId, change: 'unmerged', unmergedFrom: orgId, at: '2026-11-20T10:00:00.000Z' };
    expect(validatorFor(ProfileChangeSchema)(unmerged)).toBe(true);
    expect(firstSchemaError(ProfileChangeSchema, { ...unmerged, unmergedFrom: 'x' })).toMatch(/^\/unmergedFrom /);
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
    expect(firstSchemaError(Topics.eventsRaw.schema, { ...envelope, clientIp: undefined })).toMatch(/clientIp/);
  });

  it('accepts a sealed raw event, and holds each form to its own fields', () => {
    const sealed = { v: 2, orgId, receivedAt: '2026-11-20T10:00:00.000Z', requestId: 'r-1', keyId: '0b0e9f36-8f53-4b7a-9d2c-5e1f0a7b6c3d', sealed: 'AQID' };
    const check = (value: unknown) => firstSchemaError(Topics.eventsRaw.schema, value);
    expect(check(sealed)).toBeUndefined();
    expect(check({ ...sealed, keyId: 'k' })).toMatch(/^\/keyId /);
    expect(check({ ...sealed, sealed: 7 })).toMatch(/^\/sealed /);
    // A sealed message carries nothing in clear beside its facts.
    expect(check({ ...sealed, clientIp: '127.0.0.1' })).toBe('/ must NOT have additional properties');
    expect(check({ ...sealed, v: 3 })).toBeDefined();
    expect(check({ ...sealed, orgId: undefined })).toMatch(/orgId/);
  });

  it('names dead-letter topics after their source', () => {
    expect(deadLetterTopicName('events.raw')).toBe('events.raw.dlq');
  });
});
