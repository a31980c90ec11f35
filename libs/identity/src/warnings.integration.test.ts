import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createTestDatabase, describeWithPostgres, type TestDatabase } from '@svc/testkit';
import { identityMigrations } from './migrations';
import { WARNINGS_KEPT_PER_ORG, readWarnings, recordWarnings, type IngestionWarning } from './warnings';

describeWithPostgres('ingestion warnings', () => {
  let t: TestDatabase;
  const [busy, quiet] = [randomUUID(), randomUUID()];
  beforeAll(async () => {
    t = await createTestDatabase([identityMigrations]);
  });
  afterAll(() => t.drop());

  const warning = (orgId: string, i: number, kind: IngestionWarning['kind'] = 'soft_cap'): IngestionWarning => ({ orgId, kind, messageId: `m-${i}`, detail: kind === 'soft_cap' ? 'properties: too_deep' : null });

  it('keeps the newest thousand per organisation, whatever another organisation records', async () => {
    await recordWarnings(t.db, [warning(quiet, 0, 'unreadable_phone'), warning(quiet, 1, 'timestamp_clamped')]);
    for (let i = 0; i < WARNINGS_KEPT_PER_ORG + 5; i += 250) {
      await recordWarnings(t.db, Array.from({ length: Math.min(250, WARNINGS_KEPT_PER_ORG + 5 - i) }, (_, k) => warning(busy, i + k)));
    }
    // One more statement prunes what the last one added beyond the thousand.
    await recordWarnings(t.db, [warning(busy, WARNINGS_KEPT_PER_ORG + 5, 'unreadable_phone')]);
    const report = await readWarnings(t.db, busy, { limit: 3 });
    expect(report.counts).toEqual([
      { kind: 'soft_cap', count: WARNINGS_KEPT_PER_ORG - 1, lastAt: expect.any(String) },
      { kind: 'unreadable_phone', count: 1, lastAt: expect.any(String) },
    ]);
    expect(report.warnings.map((w) => [w.kind, w.messageId, w.detail])).toEqual([
      ['unreadable_phone', `m-${WARNINGS_KEPT_PER_ORG + 5}`, null],
      ['soft_cap', `m-${WARNINGS_KEPT_PER_ORG + 4}`, 'properties: too_deep'],
      ['soft_cap', `m-${WARNINGS_KEPT_PER_ORG + 3}`, 'properties: too_deep'],
    ]);
    expect((await readWarnings(t.db, quiet, { limit: 10 })).warnings).toHaveLength(2);
  });

  it('reads one kind', async () => {
    const report = await readWarnings(t.db, quiet, { kind: 'timestamp_clamped', limit: 10 });
    expect(report.warnings.map((w) => w.messageId)).toEqual(['m-1']);
    expect(report.counts.map((c) => c.kind)).toEqual(['timestamp_clamped', 'unreadable_phone']);
  });

  it('records nothing for no warnings', async () => {
    await expect(recordWarnings(t.db, [])).resolves.toBeUndefined();
  });
});
