import { randomBytes, randomUUID } from 'node:crypto';
import type { RawEventEnvelope, RawEventSealed } from '@svc/contracts';
import { openRawEvent, type DataKey, type SubjectKeys } from '@svc/identity';

/**
 * The gateway's key store for unit tests: a data key per anonymous id, made
 * on first use as privacy.subject_keys makes it, and `open` for reading
 * back what a bus double was given. The real store runs against PostgreSQL
 * in the integration suites.
 */
export class SubjectKeysDouble implements Pick<SubjectKeys, 'forSubjects'> {
  readonly dataKeys = new Map<string, DataKey>();
  /** Fail as an unreachable database does. */
  down = false;

  async forSubjects(_orgId: string, anonymousIds: readonly string[]): Promise<Map<string, DataKey>> {
    if (this.down) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    for (const a of anonymousIds) if (!this.dataKeys.has(a)) this.dataKeys.set(a, { id: randomUUID(), key: randomBytes(32) });
    return new Map(anonymousIds.map((a) => [a, this.dataKeys.get(a)!]));
  }

  open(sealed: RawEventSealed): RawEventEnvelope {
    const key = [...this.dataKeys.values()].find((k) => k.id === sealed.keyId);
    if (!key) throw new Error(`sealed under an unknown key ${sealed.keyId}`);
    return openRawEvent(sealed, key.key);
  }
}
