import { describe, expect, it } from '@jest/globals';
import { checkConsentDecision, CONSENT_PURPOSES, type ConsentPurpose as ContractPurpose } from '@svc/contracts';
import { consentRecord, createConsentSender, createConsentStore, isPurpose, PURPOSES } from './consent';
import { memoryStore } from './storage';
import { flushMicrotasks } from './test-support/fake-env';
import type { SendOutcome } from './transport';
import type { ConsentPurpose } from './types';

describe('consent store', () => {
  it('knows exactly the purposes of the contract', () => {
    const sdkToContract: ContractPurpose[] = [...PURPOSES];
    const contractToSdk: ConsentPurpose[] = [...CONSENT_PURPOSES];
    expect(sdkToContract).toEqual(contractToSdk);
    expect(isPurpose('analytics')).toBe(true);
    expect(isPurpose('marketing')).toBe(false);
  });

  it('keeps decisions locally, per purpose', () => {
    const store = memoryStore();
    const consent = createConsentStore(store, 'svc_consent');
    expect(consent.get('analytics')).toBeUndefined();
    consent.set('analytics', false, 'sdk', 't1');
    consent.set('fingerprinting', true, 'banner', 't2');
    expect(createConsentStore(store, 'svc_consent').decided()).toEqual({ analytics: false, fingerprinting: true });
    consent.set('analytics', true, 'sdk', 't3');
    expect(consent.get('analytics')).toBe(true);
    store.set('svc_consent', 'garbage');
    expect(consent.decided()).toEqual({});
  });
});

describe('consent records', () => {
  it('are what the consent endpoint accepts (libs/contracts ConsentDecision)', () => {
    const body = consentRecord('anon_3b241101-e2bb-4255-8caf-4136c566a962', null, { analytics: true }, 'sdk', '2026-03-01T12:00:00.000Z');
    expect(checkConsentDecision(JSON.parse(JSON.stringify(body)))).toEqual({ ok: true, decision: body });
    const banner = consentRecord('anon_3b241101-e2bb-4255-8caf-4136c566a962', 'user-9', { fingerprinting: false }, 'banner', '2026-03-01T12:00:00.000Z');
    expect(checkConsentDecision(banner)).toMatchObject({ ok: true });
  });

  it('are kept in an outbox until delivered or rejected, and re-sent later after a transient failure', async () => {
    const store = memoryStore();
    const replies: SendOutcome[] = [
      { ok: false, retry: true, status: 503, message: 'down' },
      { ok: true, status: 200, body: {}, quota: null },
    ];
    const posted: string[] = [];
    let n = 0;
    const sender = createConsentSender(store, 'outbox', async (body) => (posted.push(body), replies.shift() ?? { ok: false, retry: false, status: 400, message: 'bad' }), () => `id${++n}`, () => undefined);
    const record = consentRecord('anon_a', null, { analytics: false }, 'sdk', 't');
    sender.send(record);
    expect(JSON.parse(store.get('outbox') ?? '[]')).toEqual([{ id: 'id1', r: record }]);
    await flushMicrotasks();
    expect(store.get('outbox')).not.toBeNull();
    sender.resend();
    await flushMicrotasks();
    expect(store.get('outbox')).toBeNull();
    sender.send(record); // rejected (4xx): not kept
    await flushMicrotasks();
    expect(store.get('outbox')).toBeNull();
    expect(posted.map((p) => JSON.parse(p) as unknown)).toEqual([record, record, record]);
  });
});
