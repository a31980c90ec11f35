import { createHash } from 'node:crypto';
import type { Conversion } from '@svc/conversions';

/** The clear-text contact details behind the sample conversion's hashes, to prove none of them leaves. */
export const CLEAR_TEXT = {
  email: 'Asha.Rao@example.com',
  phone: '+919876543210',
  phoneDigits: '919876543210',
} as const;

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A complete conversion, as the forwarder hands it over: everything personal already hashed. */
export function sampleConversion(overrides: Partial<Conversion> = {}): Conversion {
  return {
    messageId: 'msg-0001',
    eventName: 'purchase',
    eventTime: new Date('2026-03-14T09:26:53.589Z'),
    value: 1499.5,
    currency: 'INR',
    orderId: 'order-42',
    hashedEmail: sha256(CLEAR_TEXT.email.trim().toLowerCase()),
    hashedPhone: sha256(CLEAR_TEXT.phone),
    hashedPhoneDigits: sha256(CLEAR_TEXT.phoneDigits),
    clientIp: '203.0.113.7',
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64)',
    pageUrl: 'https://shop.example/checkout/done',
    click: { type: 'gclid', id: 'Cj0KCQiA-gclid-sample', firstSeenAt: new Date('2026-03-10T18:00:00.000Z') },
    ...overrides,
  };
}
