import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { loadConfig } from '../config/config';
import { ConnectionCheckError, tlsFailure } from '../connections/startup-check';
import { databaseConnection, databaseTlsConfigSpec, sslForClient } from './connection';

const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-db-connection-'));
const pem = (name: string) => {
  const file = path.join(dir, name);
  writeFileSync(file, `-----BEGIN X-----\n${name}\n-----END X-----\n`);
  return file;
};
const url = 'postgres://svc:pw@db.example:5432/svc';
const connect = (env: Record<string, string>, u = url) => databaseConnection(u, loadConfig(databaseTlsConfigSpec, env));

describe('databaseConnection', () => {
  it('unset: the URL alone decides (pg reads its sslmode)', () => {
    expect(connect({})).toEqual({ url });
  });

  it.each([
    ['disable', {}, false],
    ['require', {}, { rejectUnauthorized: false }],
    ['verify-full', {}, { rejectUnauthorized: true }],
  ] as const)('%s', (mode, _, ssl) => {
    expect(connect({ DATABASE_SSL_MODE: mode }).ssl).toEqual(ssl);
  });

  it('verify-full with a CA and a client certificate', () => {
    const c = connect({ DATABASE_SSL_MODE: 'verify-full', DATABASE_SSL_CA_FILE: pem('ca'), DATABASE_SSL_CERT_FILE: pem('cert'), DATABASE_SSL_KEY_FILE: pem('key') });
    expect(c.ssl).toEqual({ rejectUnauthorized: true, ca: expect.stringContaining('ca'), cert: expect.stringContaining('cert'), key: expect.stringContaining('key') });
  });

  it('verify-ca checks the chain, not the name', () => {
    const ssl = connect({ DATABASE_SSL_MODE: 'verify-ca', DATABASE_SSL_CA_FILE: pem('ca2') }).ssl;
    expect(ssl && ssl.rejectUnauthorized).toBe(true);
    expect(ssl && ssl.checkServerIdentity?.('elsewhere', {} as never)).toBeUndefined();
  });

  it.each([
    ['files without a mode', { DATABASE_SSL_CA_FILE: '/x' }, url, 'DATABASE_SSL_MODE'],
    ['TLS set twice', { DATABASE_SSL_MODE: 'require' }, `${url}?sslmode=require`, 'DATABASE_SSL_MODE'],
    ['a certificate without its key', { DATABASE_SSL_MODE: 'verify-full', DATABASE_SSL_CERT_FILE: '/x' }, url, 'DATABASE_SSL_KEY_FILE'],
    ['an unreadable CA', { DATABASE_SSL_MODE: 'verify-full', DATABASE_SSL_CA_FILE: path.join(dir, 'none') }, url, 'DATABASE_SSL_CA_FILE'],
  ] as const)('%s names %s', (_, env, u, setting) => {
    expect(() => connect(env, u)).toThrow(ConnectionCheckError);
    expect(() => connect(env, u)).toThrow(new RegExp(`^${setting}: `));
  });
});

describe('sslForClient', () => {
  it('keeps the client key for the next client after pg has hidden it on the first', () => {
    const ssl = { rejectUnauthorized: true, cert: 'c', key: 'k' };
    const first = sslForClient(ssl);
    new pg.Client({ ssl: first });
    // pg made `key` non-enumerable on what it was given: a plain spread would now drop it.
    expect({ ...first }).not.toHaveProperty('key');
    expect(sslForClient(first)).toEqual({ rejectUnauthorized: true, cert: 'c', key: 'k' });
    expect(Object.keys(sslForClient(ssl) as object)).toContain('key');
  });
});

describe('tlsFailure', () => {
  it.each([
    [{ code: 'SELF_SIGNED_CERT_IN_CHAIN', message: 'self-signed certificate in certificate chain' }, 'untrusted'],
    [{ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', message: 'unable to verify the first certificate' }, 'untrusted'],
    [{ code: 'ERR_TLS_CERT_ALTNAME_INVALID', message: "Hostname/IP does not match certificate's altnames" }, 'wrong-name'],
    [{ code: 'CERT_HAS_EXPIRED', message: 'certificate has expired' }, 'expired'],
    [{ name: 'KafkaJSConnectionError', originalError: { code: 'DEPTH_ZERO_SELF_SIGNED_CERT', message: 'self-signed' } }, 'untrusted'],
    [{ errors: [{ code: 'ECONNREFUSED' }, { cause: { code: 'CERT_UNTRUSTED', message: 'x' } }] }, 'untrusted'],
  ])('%j is %s', (err, kind) => {
    expect(tlsFailure(err)?.kind).toBe(kind);
  });

  it.each([[{ code: 'ECONNREFUSED' }], [new Error('boom')], [null], ['text']])('%j is none', (err) => {
    expect(tlsFailure(err)).toBeUndefined();
  });
});
