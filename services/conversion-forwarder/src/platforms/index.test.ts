import { describe, expect, it } from '@jest/globals';
import type { GoogleAdsConfig, MetaConfig, Platform } from '@svc/conversions';
import { createPlatformClient } from './index';

const google: GoogleAdsConfig = {
  customerId: '1234567890',
  conversionActionId: '1',
  developerToken: 'd',
  clientId: 'c',
  clientSecret: 's',
  refreshToken: 'r',
};
const meta: MetaConfig = { pixelId: '1', accessToken: 't' };

describe('createPlatformClient', () => {
  it('builds the client for each platform', () => {
    expect(createPlatformClient('google_ads', google).platform).toBe('google_ads');
    expect(createPlatformClient('meta', meta).platform).toBe('meta');
  });

  it('refuses a platform it does not know', () => {
    expect(() => createPlatformClient('tiktok' as Platform, meta)).toThrow('unknown conversion platform: tiktok');
  });
});
