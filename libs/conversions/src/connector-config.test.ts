import { describe, expect, it } from '@jest/globals';
import { parseEventNames, platformConfig, splitConnectorConfig } from './connector-config';

const google = {
  customer_id: '123-456-7890',
  conversion_action_id: '987654',
  client_id: 'client.apps',
  developer_token: 'dev-token',
  client_secret: 'client-secret',
  refresh_token: 'refresh',
};
const meta = { pixel_id: '1234567890', access_token: 'EAAB' };

describe('connector config', () => {
  it('splits Google Ads settings from secrets, and maps them for the client', () => {
    const split = splitConnectorConfig('google_ads', { ...google, api_base_url: 'http://127.0.0.1:9' });
    expect(split).toEqual({
      settings: { customer_id: '123-456-7890', conversion_action_id: '987654', client_id: 'client.apps', api_base_url: 'http://127.0.0.1:9' },
      secrets: { developer_token: 'dev-token', client_secret: 'client-secret', refresh_token: 'refresh' },
    });
    expect(platformConfig(split)).toMatchObject({ customerId: '123-456-7890', developerToken: 'dev-token', apiBaseUrl: 'http://127.0.0.1:9' });
  });

  it('splits Meta settings from secrets', () => {
    expect(splitConnectorConfig('meta', meta)).toEqual({ settings: { pixel_id: '1234567890' }, secrets: { access_token: 'EAAB' } });
  });

  it.each([
    ['google_ads', 'not an object', '--config must be a JSON object'],
    ['google_ads', [], '--config must be a JSON object'],
    ['google_ads', {}, 'invalid google_ads config: customer_id: required; conversion_action_id: required; client_id: required; developer_token: required; client_secret: required; refresh_token: required'],
    ['google_ads', { ...google, customer_id: 'abc' }, 'invalid google_ads config: customer_id: must be digits (dashes allowed)'],
    ['google_ads', { ...google, pixel_id: '1' }, 'invalid google_ads config: pixel_id: not a google_ads setting'],
    ['google_ads', { ...google, api_base_url: 'http://ads.example.com' }, 'invalid google_ads config: api_base_url: must be an https URL (http only for localhost)'],
    ['google_ads', { ...google, token_url: 'nope' }, 'invalid google_ads config: token_url: must be a URL'],
    ['meta', { pixel_id: '1' }, 'invalid meta config: access_token: required'],
    ['meta', { ...meta, access_token: { nested: true } }, 'invalid meta config: access_token: must be a string'],
  ] as const)('%s %j → %s', (platform, config, message) => {
    expect(() => splitConnectorConfig(platform, config)).toThrow(message);
  });

  it.each([
    [undefined, null],
    ['purchase', ['purchase']],
    [' Order Completed , purchase,purchase ', ['Order Completed', 'purchase']],
  ])('--events %j → %j', (raw, expected) => {
    expect(parseEventNames(raw)).toEqual(expected);
  });

  it('refuses an empty custom set', () => {
    expect(() => parseEventNames(' , ')).toThrow('--events must name at least one event');
  });
});
