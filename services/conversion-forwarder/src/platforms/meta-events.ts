import type { Conversion } from '@svc/conversions';

/**
 * The server event Meta's Conversions API receives for one conversion, in the
 * shape of `POST /{pixel-id}/events`.
 */

/**
 * Our default conversion names (without `$`) and the Meta standard event each
 * becomes. Any other name, a connector's custom one, is sent unchanged as a
 * custom event.
 */
export const META_STANDARD_EVENTS: ReadonlyMap<string, string> = new Map([
  ['purchase', 'Purchase'],
  ['sign_up', 'CompleteRegistration'],
  ['add_to_cart', 'AddToCart'],
  ['initiate_checkout', 'InitiateCheckout'],
  ['lead', 'Lead'],
  ['subscribe', 'Subscribe'],
]);

/** `purchase` and `$purchase` → `Purchase`; anything else as it was ingested. */
export function metaEventName(eventName: string): string {
  return META_STANDARD_EVENTS.get(eventName.startsWith('$') ? eventName.slice(1) : eventName) ?? eventName;
}

/**
 * Meta's fbc as its pixel writes the `_fbc` cookie: `fb.1.<creation ms>.<fbclid>`.
 * The creation time is when we first saw the click, which is what Meta
 * attributes from; the fbclid is passed byte for byte (Meta treats a changed
 * one as a modified click ID).
 */
export function metaFbc(fbclid: string, firstSeenAt: Date): string {
  return `fb.1.${firstSeenAt.getTime()}.${fbclid}`;
}

export function metaServerEvent(conversion: Conversion): Record<string, unknown> {
  const userData: Record<string, unknown> = {};
  if (conversion.hashedEmail) userData.em = [conversion.hashedEmail];
  if (conversion.hashedPhoneDigits) userData.ph = [conversion.hashedPhoneDigits];
  userData.fbc = metaFbc(conversion.click.id, conversion.click.firstSeenAt);
  if (conversion.clientIp) userData.client_ip_address = conversion.clientIp;
  if (conversion.userAgent) userData.client_user_agent = conversion.userAgent;

  const customData: Record<string, unknown> = {};
  if (conversion.value !== null) {
    customData.value = conversion.value;
    customData.currency = conversion.currency;
  }
  if (conversion.orderId !== null) customData.order_id = conversion.orderId;

  return {
    event_name: metaEventName(conversion.eventName),
    event_time: Math.floor(conversion.eventTime.getTime() / 1000),
    // The messageId is also the browser pixel's eventID, so Meta de-duplicates the pair.
    event_id: conversion.messageId,
    action_source: 'website',
    ...(conversion.pageUrl ? { event_source_url: conversion.pageUrl } : {}),
    user_data: userData,
    ...(Object.keys(customData).length > 0 ? { custom_data: customData } : {}),
  };
}

export function metaEventsBody(conversion: Conversion, accessToken: string, testEventCode: string | undefined): unknown {
  // The token travels in the body, never the query string: URLs end up in proxy and access logs.
  return { data: [metaServerEvent(conversion)], access_token: accessToken, ...(testEventCode ? { test_event_code: testEventCode } : {}) };
}
