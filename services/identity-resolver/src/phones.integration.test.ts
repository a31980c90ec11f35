import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { readToEnd } from '@svc/bus';
import type { RawLogMessage } from '@svc/contracts';
import { DEFAULT_IDENTITY_RULES, pendingRestatements, readWarnings, setIdentityRules } from '@svc/identity';
import { describeWithPostgres } from '@svc/testkit';
import type { ResolverMetrics } from './metrics';
import { startRestatingPhones } from './phone-restatement';
import { replayProjections } from './replay';
import { Harness } from './test-support/harness';

/**
 * Phone traits on the running resolver: read in the organisation's region
 * (its identity rules) or the deployment's, validated, never guessed; and a
 * change of region has the resolver read the stored numbers again
 * (phone-restatement.ts), as a replay of the whole log would.
 */
describeWithPostgres('phone numbers by the organisation’s identity rules', () => {
  const h = new Harness();
  let org: string;
  let metrics: ResolverMetrics;
  const phones = async () => (await h.db('identity.identity_signals').where({ org_id: org, signal_type: 'phone' }).orderBy('signal_value').pluck('signal_value')) as string[];
  const profileOf = async (anonymousId: string) => (await h.profileBySignal(org, 'anonymous_id', anonymousId))!.id;

  beforeAll(async () => {
    await h.setUp();
    metrics = (await h.startResolver()).metrics;
    org = await h.org();
    // The deployment's default (91): a British national number is read as an Indian one.
    await h.ingest([
      h.envelope(org, { type: 'identify', anonymousId: 'before-rules', traits: { phone: '020 7946 0958' } }),
      h.envelope(org, { type: 'identify', anonymousId: 'international', traits: { phone: '+44 20 7946 0958' } }),
      h.envelope(org, { type: 'identify', anonymousId: 'typo', traits: { phone: '020 7946' }, messageId: 'm-typo' }),
    ]);
  }, 60_000);
  afterAll(() => h.tearDown());

  it('without rules, reads a national number in the deployment’s country, and keeps an invalid one out', async () => {
    expect(await phones()).toEqual(['+442079460958', '+912079460958']);
    expect(await profileOf('before-rules')).not.toBe(await profileOf('international'));
    expect(await profileOf('typo')).toBeDefined();
    expect((await metrics.warnings.get()).values).toEqual([expect.objectContaining({ labels: { kind: 'unreadable_phone' }, value: 1 })]);
    // The organisation's operators read it, without the number.
    expect((await readWarnings(h.db, org, { limit: 10 })).warnings).toEqual([expect.objectContaining({ kind: 'unreadable_phone', messageId: 'm-typo', detail: null })]);
  });

  it('with the organisation in GB, reads the next national number as British: the same person as the international one', async () => {
    await setIdentityRules(h.db, org, { ...DEFAULT_IDENTITY_RULES, phone: { default_region: 'GB' } });
    await h.ingest([h.envelope(org, { type: 'identify', anonymousId: 'after-rules', traits: { phone: '020 7946 0958' } })]);
    expect(await profileOf('after-rules')).toBe(await profileOf('international'));
    // What was stored before stays as it was read until the resolver reads it again: the region's change queued that.
    expect(await phones()).toEqual(['+442079460958', '+912079460958']);
    expect(await pendingRestatements(h.db)).toBeGreaterThan(0);
  });

  it('the region’s change has the resolver read the stored numbers again: one person, no Indian number left', async () => {
    const restating = startRestatingPhones({ db: h.db, logger: h.logger, intervalMs: 60_000 });
    await restating.pass();
    await restating.stop();
    expect(await pendingRestatements(h.db)).toBe(0);
    expect(await phones()).toEqual(['+442079460958']);
    const person = await profileOf('before-rules');
    for (const anonymousId of ['international', 'after-rules']) expect(await profileOf(anonymousId)).toBe(person);
  });

  it('rules stored again with the same region queue nothing', async () => {
    await setIdentityRules(h.db, org, { ...DEFAULT_IDENTITY_RULES, phone: { default_region: 'GB' }, limits: { email: 5 } });
    expect(await pendingRestatements(h.db)).toBe(0);
  });

  it('a replay reads the whole log again under the rules: the same person', async () => {
    const report = await replayProjections({
      db: h.db,
      logger: h.logger,
      label: 'phones',
      keys: h.keyReader(),
      batch: { hashes: h.hashes },
      source: (consume) => readToEnd<RawLogMessage>(h.bus, h.topics.eventsRaw, (ms) => consume(ms.map((m) => m.value))),
    });
    expect(report.skipped).toBe(0);
    expect(await phones()).toEqual(['+442079460958']);
    const person = await profileOf('before-rules');
    for (const anonymousId of ['international', 'after-rules']) expect(await profileOf(anonymousId)).toBe(person);
    // The rules and the warnings came over with the projections, the warnings once.
    expect(await h.db('identity.identity_rules').where({ org_id: org }).first()).toMatchObject({ rules: { phone: { default_region: 'GB' } } });
    expect((await readWarnings(h.db, org, { limit: 10 })).warnings.map((w) => w.messageId)).toEqual(['m-typo']);
  });
});
