import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { ConnectionCheckError, loadConfig } from '@svc/runtime';
import { busConfigSpec, kafkaConnection } from './config';

const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-bus-config-'));
const pem = (name: string) => {
  const file = path.join(dir, name);
  writeFileSync(file, `-----BEGIN CERTIFICATE-----\n${name}\n-----END CERTIFICATE-----\n`);
  return file;
};
const base = { KAFKA_BROKERS: 'b1:9093,b2:9093', SCHEMA_REGISTRY_URL: 'https://registry.example:8081' };
const connection = (env: Record<string, string>) => kafkaConnection(loadConfig(busConfigSpec, { ...base, ...env }));

describe('kafkaConnection', () => {
  it('is undefined on the Postgres-backed log', () => {
    expect(kafkaConnection(loadConfig(busConfigSpec, {}))).toBeUndefined();
  });

  it('defaults: plaintext, three replicas, two in sync', () => {
    expect(connection({})).toEqual({ brokers: ['b1:9093', 'b2:9093'], registryUrl: base.SCHEMA_REGISTRY_URL, replicationFactor: 3, minInsyncReplicas: 2 });
  });

  it('SASL_SSL with SCRAM, a CA, a client certificate and a registry login', () => {
    const c = connection({
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SSL_CA_FILE: pem('ca.crt'),
      KAFKA_SSL_CERT_FILE: pem('client.crt'),
      KAFKA_SSL_KEY_FILE: pem('client.key'),
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: 'svc',
      KAFKA_SASL_PASSWORD: 'pw:with:colons',
      SCHEMA_REGISTRY_CA_FILE: pem('registry-ca.crt'),
      SCHEMA_REGISTRY_USERNAME: 'reg',
      SCHEMA_REGISTRY_PASSWORD: 'rpw',
      KAFKA_REPLICATION_FACTOR: '1',
      KAFKA_MIN_INSYNC_REPLICAS: '1',
    });
    expect(c?.ssl).toEqual({ ca: expect.stringContaining('ca.crt'), cert: expect.stringContaining('client.crt'), key: expect.stringContaining('client.key') });
    expect(c?.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'svc', password: 'pw:with:colons' });
    expect(c?.registryAccess).toEqual({ ca: expect.stringContaining('registry-ca.crt'), username: 'reg', password: 'rpw' });
    expect([c?.replicationFactor, c?.minInsyncReplicas]).toEqual([1, 1]);
  });

  it('SSL alone has TLS and no login', () => {
    const c = connection({ KAFKA_SECURITY_PROTOCOL: 'SSL' });
    expect([c?.ssl, c?.sasl]).toEqual([{}, undefined]);
  });

  const sasl = { KAFKA_SASL_MECHANISM: 'PLAIN', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' };
  const wrong: Array<[string, Record<string, string>, string, RegExp]> = [
    ['no registry', { SCHEMA_REGISTRY_URL: '' }, 'SCHEMA_REGISTRY_URL', /required with KAFKA_BROKERS/],
    ['a CA for plaintext', { KAFKA_SSL_CA_FILE: '/x' }, 'KAFKA_SSL_CA_FILE', /needs KAFKA_SECURITY_PROTOCOL=SSL or SASL_SSL \(it is PLAINTEXT\)/],
    ['a client certificate without its key', { KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CERT_FILE: '/x' }, 'KAFKA_SSL_KEY_FILE', /needs both/],
    ['a key without its certificate', { KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_KEY_FILE: '/x' }, 'KAFKA_SSL_CERT_FILE', /needs both/],
    ['SASL without a mechanism', { KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' }, 'KAFKA_SASL_MECHANISM', /required with KAFKA_SECURITY_PROTOCOL=SASL_SSL/],
    ['SASL without a password', { KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT', KAFKA_SASL_MECHANISM: 'PLAIN', KAFKA_SASL_USERNAME: 'u' }, 'KAFKA_SASL_PASSWORD', /required/],
    ['a login without SASL', { KAFKA_SECURITY_PROTOCOL: 'SSL', ...sasl }, 'KAFKA_SASL_MECHANISM', /needs KAFKA_SECURITY_PROTOCOL=SASL_SSL or SASL_PLAINTEXT \(it is SSL\)/],
    ['more in sync than replicas', { KAFKA_REPLICATION_FACTOR: '1' }, 'KAFKA_MIN_INSYNC_REPLICAS', /2 is more than KAFKA_REPLICATION_FACTOR \(1\)/],
    ['a registry user without a password', { SCHEMA_REGISTRY_USERNAME: 'u' }, 'SCHEMA_REGISTRY_PASSWORD', /needs both/],
    ['a registry user with a colon', { SCHEMA_REGISTRY_USERNAME: 'a:b', SCHEMA_REGISTRY_PASSWORD: 'p' }, 'SCHEMA_REGISTRY_USERNAME', /must not contain ":"/],
    ['a registry CA for http', { SCHEMA_REGISTRY_URL: 'http://r:8081', SCHEMA_REGISTRY_CA_FILE: '/x' }, 'SCHEMA_REGISTRY_CA_FILE', /needs an https SCHEMA_REGISTRY_URL/],
    ['an unreadable CA file', { KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CA_FILE: path.join(dir, 'missing.crt') }, 'KAFKA_SSL_CA_FILE', /cannot read .*missing\.crt \(ENOENT\)/],
  ];
  it.each(wrong)('%s names %s', (_, env, setting, problem) => {
    let thrown: unknown;
    try {
      connection(env);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ConnectionCheckError);
    expect((thrown as ConnectionCheckError).setting).toBe(setting);
    expect((thrown as Error).message).toMatch(new RegExp(`^${setting}: `));
    expect((thrown as Error).message).toMatch(problem);
  });

  it('a file that is no PEM is named', () => {
    const file = path.join(dir, 'not-pem.crt');
    writeFileSync(file, 'hello');
    expect(() => connection({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CA_FILE: file })).toThrow(/^KAFKA_SSL_CA_FILE: .*holds no PEM block/);
  });
});
