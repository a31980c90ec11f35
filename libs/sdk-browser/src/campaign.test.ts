import { describe, expect, it } from '@jest/globals';
import { CLICK_ID_TYPES } from '@svc/contracts';
import { CLICK_IDS, extendReferrerChain, hostOf, MAX_REFERRER_CHAIN, parseCampaign } from './campaign';

describe('campaign', () => {
  it('maps UTM parameters and keeps every click ID', () => {
    const search = `?utm_source=google&utm_medium=cpc&utm_campaign=spring%20sale&utm_term=shoes&utm_content=ad+1&${CLICK_IDS.map((k) => `${k}=v_${k}`).join('&')}&other=1`;
    expect(parseCampaign(search)).toEqual({
      source: 'google',
      medium: 'cpc',
      name: 'spring sale',
      term: 'shoes',
      content: 'ad 1',
      ...Object.fromEntries(CLICK_IDS.map((k) => [k, `v_${k}`])),
    });
    expect(CLICK_IDS).toEqual(['gclid', 'fbclid', 'ttclid', 'msclkid', 'li_fat_id', 'gbraid', 'wbraid', 'twclid', 'igshid', 'epik', 'dclid', 'rdt_cid', 'gad_source']);
    expect(CLICK_IDS).toEqual(CLICK_ID_TYPES);
  });

  it('ignores empty values and keeps the first of repeated parameters', () => {
    expect(parseCampaign('?utm_source=&gclid=a&gclid=b&UTM_MEDIUM=email')).toEqual({ gclid: 'a', medium: 'email' });
    expect(parseCampaign('')).toEqual({});
  });

  it('builds the referrer chain from external referrers only', () => {
    let chain = extendReferrerChain([], 'https://www.google.com/', 'shop.example', 't1');
    chain = extendReferrerChain(chain, 'https://shop.example/cart', 'shop.example', 't2');
    chain = extendReferrerChain(chain, 'https://www.google.com/', 'shop.example', 't3');
    chain = extendReferrerChain(chain, '', 'shop.example', 't4');
    chain = extendReferrerChain(chain, 'https://news.example/a', 'shop.example', 't5');
    expect(chain).toEqual([
      { url: 'https://www.google.com/', timestamp: 't1' },
      { url: 'https://news.example/a', timestamp: 't5' },
    ]);
    for (let i = 0; i < 20; i++) chain = extendReferrerChain(chain, `https://r${i}.example/`, 'shop.example', `x${i}`);
    expect(chain).toHaveLength(MAX_REFERRER_CHAIN);
    expect(chain.at(-1)?.url).toBe('https://r19.example/');
  });

  it('extracts hosts', () => {
    expect(hostOf('https://user@Sub.Example.com:8080/x?y')).toBe('sub.example.com');
    expect(hostOf('not a url')).toBe('');
  });
});
