import type { Conversion } from '@svc/conversions';
import { USABLE_CLICK_TYPES } from './types';

/**
 * The body of Google Ads' `customers/{id}:uploadClickConversions` for one
 * conversion, in the REST (camelCase JSON) spelling of ClickConversion.
 */

/** Google shows customer ids as 123-456-7890; the API takes the digits only. */
export function googleCustomerId(id: string): string {
  return id.replace(/-/g, '');
}

/** `yyyy-mm-dd hh:mm:ss+00:00`: Google requires an explicit offset; we always send UTC. */
export function googleConversionDateTime(at: Date): string {
  return `${at.toISOString().slice(0, 19).replace('T', ' ')}+00:00`;
}

export function isGoogleClickType(type: string): type is 'gclid' | 'gbraid' | 'wbraid' {
  return USABLE_CLICK_TYPES.google_ads.includes(type);
}

export function clickConversion(conversion: Conversion, customerId: string, conversionActionId: string): Record<string, unknown> {
  const { click } = conversion;
  // Exactly one of gclid, gbraid, wbraid: Google refuses GBRAID_WBRAID_BOTH_SET.
  const body: Record<string, unknown> = {
    [click.type]: click.id,
    conversionAction: `customers/${customerId}/conversionActions/${conversionActionId}`,
    conversionDateTime: googleConversionDateTime(conversion.eventTime),
  };
  if (conversion.value !== null) {
    body.conversionValue = conversion.value;
    body.currencyCode = conversion.currency;
  }
  if (conversion.orderId !== null) body.orderId = conversion.orderId;
  const userIdentifiers = [
    ...(conversion.hashedEmail ? [{ hashedEmail: conversion.hashedEmail }] : []),
    ...(conversion.hashedPhone ? [{ hashedPhoneNumber: conversion.hashedPhone }] : []),
  ];
  if (userIdentifiers.length > 0) body.userIdentifiers = userIdentifiers;
  return body;
}

export function uploadClickConversionsBody(conversion: Conversion, customerId: string, conversionActionId: string): unknown {
  // partialFailure is required true; conversion-level refusals then arrive in a 200's partialFailureError.
  return { conversions: [clickConversion(conversion, customerId, conversionActionId)], partialFailure: true };
}
