import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from '@jest/globals';
import { clientIp, parseTrustedProxies } from './client-ip';

const request = (remoteAddress: string | undefined, forwardedFor?: string | string[]): IncomingMessage =>
  ({
    socket: { remoteAddress },
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  }) as unknown as IncomingMessage;

const TRUSTED = ['10.0.0.0/8', '192.168.1.10', 'fd00::/8'];

describe('clientIp', () => {
  const cases: Array<{ name: string; peer: string | undefined; xff?: string | string[]; trusted?: string[]; expected: string }> = [
    { name: 'direct IPv4 client', peer: '203.0.113.7', expected: '203.0.113.7' },
    { name: 'direct IPv6 client, RFC 5952 form', peer: '2001:0db8:0000:0000:0000:0000:0000:0001', expected: '2001:db8::1' },
    { name: 'IPv4-mapped IPv6 peer is reported as IPv4', peer: '::ffff:203.0.113.7', expected: '203.0.113.7' },
    { name: 'no trusted proxies: XFF ignored', peer: '10.0.0.5', xff: '198.51.100.1', trusted: [], expected: '10.0.0.5' },
    { name: 'untrusted sender: its XFF is ignored', peer: '203.0.113.7', xff: '198.51.100.1', expected: '203.0.113.7' },
    { name: 'via trusted proxy (CIDR)', peer: '10.1.2.3', xff: '198.51.100.1', expected: '198.51.100.1' },
    { name: 'via trusted proxy (single address)', peer: '192.168.1.10', xff: '198.51.100.1', expected: '198.51.100.1' },
    { name: 'via trusted IPv4-mapped peer', peer: '::ffff:10.1.2.3', xff: '198.51.100.1', expected: '198.51.100.1' },
    { name: 'via trusted IPv6 proxy', peer: 'fd00::1', xff: '2001:db8::42', expected: '2001:db8::42' },
    {
      name: 'chain: right-most untrusted wins over a forged left part',
      peer: '10.0.0.1',
      xff: '1.1.1.1, 198.51.100.1, 10.0.0.2',
      expected: '198.51.100.1',
    },
    { name: 'chain with no spaces', peer: '10.0.0.1', xff: '1.1.1.1,198.51.100.1,10.0.0.2', expected: '198.51.100.1' },
    { name: 'repeated XFF headers are one chain', peer: '10.0.0.1', xff: ['1.1.1.1', '198.51.100.1, 10.0.0.2'], expected: '198.51.100.1' },
    { name: 'every hop trusted: the left-most', peer: '10.0.0.1', xff: '10.9.9.9, 10.0.0.2', expected: '10.9.9.9' },
    { name: 'trusted peer without XFF: the peer', peer: '10.0.0.1', expected: '10.0.0.1' },
    { name: 'trusted peer with empty XFF: the peer', peer: '10.0.0.1', xff: '', expected: '10.0.0.1' },
    { name: 'XFF entry that is IPv4-mapped IPv6', peer: '10.0.0.1', xff: '::ffff:198.51.100.1', expected: '198.51.100.1' },
    { name: 'XFF entry with a port', peer: '10.0.0.1', xff: '198.51.100.1:5555', expected: '198.51.100.1' },
    { name: 'XFF IPv6 entry with brackets and port', peer: '10.0.0.1', xff: '[2001:db8::9]:443', expected: '2001:db8::9' },
    { name: 'garbage hop stops the walk at the nearest trusted hop', peer: '10.0.0.1', xff: '1.1.1.1, unknown, 10.0.0.2', expected: '10.0.0.2' },
    { name: 'garbage right next to the peer: the peer', peer: '10.0.0.1', xff: 'unknown', expected: '10.0.0.1' },
    { name: 'legacy IPv4 forms are not addresses', peer: '10.0.0.1', xff: '127.1', expected: '10.0.0.1' },
    {
      name: 'trusted list in IPv4-mapped CIDR form',
      peer: '10.0.0.1',
      xff: '198.51.100.1',
      trusted: ['::ffff:10.0.0.0/104'],
      expected: '198.51.100.1',
    },
    { name: 'destroyed socket (no peer address)', peer: undefined, expected: '' },
  ];

  it.each(cases)('$name', ({ peer, xff, trusted, expected }) => {
    expect(clientIp(request(peer, xff), trusted ?? TRUSTED)).toBe(expected);
  });
});

describe('parseTrustedProxies', () => {
  it('accepts CIDRs and bare addresses of both families', () => {
    expect(parseTrustedProxies(['10.0.0.0/8', '192.168.1.10', '::1', 'fd00::/8']).map(([, bits]) => bits)).toEqual([
      8, 32, 128, 8,
    ]);
  });

  it.each(['10.0.0.0/33', 'not-an-ip', '10.0.0/8', '127.1', '10.0.0.0/x', ''])('rejects %p', (entry) => {
    expect(() => parseTrustedProxies([entry])).toThrow();
  });
});
