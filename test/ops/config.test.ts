import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { ConfigError, loadConfig } from '../../src/config.ts';

const pem = (type: 'ec' | 'ed25519' | 'rsa', part: 'private' | 'public'): string => {
  const pair =
    type === 'ec'
      ? crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      : type === 'rsa'
        ? crypto.generateKeyPairSync('rsa', { modulusLength: 2048 })
        : crypto.generateKeyPairSync('ed25519');
  return part === 'private'
    ? pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
    : pair.publicKey.export({ format: 'pem', type: 'spki' }).toString();
};

/** DESIGN §3: a wrong value stops start-up with one clear line naming the variable. */
function refused(env: Record<string, string>, name: string): void {
  assert.throws(
    () => loadConfig(env),
    (err: unknown) => err instanceof ConfigError && err.message.startsWith(name) && !err.message.includes('\n'),
    `${JSON.stringify(env).slice(0, 80)} should be refused naming ${name}`,
  );
}

describe('configuration', () => {
  it('refuses an unknown LOG_LEVEL, and takes every pino level', () => {
    refused({ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL');
    refused({ LOG_LEVEL: 'INFO' }, 'LOG_LEVEL');
    for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) {
      assert.equal(loadConfig({ LOG_LEVEL: level }).logLevel, level);
    }
    assert.equal(loadConfig({}).logLevel, 'info');
  });

  it('takes an ISO 4217 CURRENCY (USD by default) and refuses anything else', () => {
    assert.equal(loadConfig({}).currency, 'USD');
    assert.equal(loadConfig({ CURRENCY: 'EUR' }).currency, 'EUR');
    for (const value of ['eur', 'EURO', 'XYZ', '€']) refused({ CURRENCY: value }, 'CURRENCY');
  });

  it('refuses a JWT_PRIVATE_KEY that does not parse or is not P-256 / Ed25519, and takes one that is', () => {
    refused({ JWT_PRIVATE_KEY: 'not a key' }, 'JWT_PRIVATE_KEY');
    refused({ JWT_PRIVATE_KEY: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----' }, 'JWT_PRIVATE_KEY');
    refused({ JWT_PRIVATE_KEY: pem('rsa', 'private') }, 'JWT_PRIVATE_KEY');
    for (const type of ['ec', 'ed25519'] as const) {
      const key = pem(type, 'private');
      assert.equal(loadConfig({ JWT_PRIVATE_KEY: key }).jwtPrivateKey, key);
    }
  });

  it('refuses a JWT_PREVIOUS_PUBLIC_KEY that does not parse or is not P-256 / Ed25519', () => {
    refused({ JWT_PREVIOUS_PUBLIC_KEY: 'garbage' }, 'JWT_PREVIOUS_PUBLIC_KEY');
    refused({ JWT_PREVIOUS_PUBLIC_KEY: pem('rsa', 'public') }, 'JWT_PREVIOUS_PUBLIC_KEY');
    const key = pem('ec', 'public');
    assert.equal(loadConfig({ JWT_PREVIOUS_PUBLIC_KEY: key }).jwtPreviousPublicKey, key);
  });

  it('TRUST_PROXY is true, false or a list of proxy addresses, CIDRs or proxy-addr names', () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true);
    assert.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: '10.0.0.0/8, loopback,2001:db8::1' }).trustProxy, '10.0.0.0/8,loopback,2001:db8::1');
    refused({ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY');
    refused({ TRUST_PROXY: '10.0.0.0/33' }, 'TRUST_PROXY');
    refused({ TRUST_PROXY: '2' }, 'TRUST_PROXY');
  });

  it('refuses out-of-range numbers and malformed URLs, naming the variable', () => {
    refused({ BCRYPT_ROUNDS: '3' }, 'BCRYPT_ROUNDS');
    refused({ PORT: 'eighty' }, 'PORT');
    refused({ REDIS_URL: 'http://127.0.0.1:6379' }, 'REDIS_URL');
    refused({ JWT_SECRET: 'short' }, 'JWT_SECRET');
    refused({ EMBEDDED_SHARED_BUFFERS_MB: '0' }, 'EMBEDDED_SHARED_BUFFERS_MB');
    refused({ EMBEDDED_SHARED_BUFFERS_MB: '4097' }, 'EMBEDDED_SHARED_BUFFERS_MB');
    assert.equal(loadConfig({}).embeddedSharedBuffersMb, 16);
    assert.equal(loadConfig({ EMBEDDED_SHARED_BUFFERS_MB: '16' }).embeddedSharedBuffersMb, 16);
    refused({ DATABASE_POOL_SIZE: '0' }, 'DATABASE_POOL_SIZE');
    refused({ DATABASE_POOL_SIZE: 'many' }, 'DATABASE_POOL_SIZE');
    assert.equal(loadConfig({}).databasePoolSize, 20);
    assert.equal(loadConfig({ DATABASE_POOL_SIZE: '5' }).databasePoolSize, 5);
    refused({ JOB_QUEUE_POOL_SIZE: '1' }, 'JOB_QUEUE_POOL_SIZE');
    assert.equal(loadConfig({}).jobQueuePoolSize, 10);
    assert.equal(loadConfig({ JOB_QUEUE_POOL_SIZE: '4' }).jobQueuePoolSize, 4);
  });

  it('WEBHOOK_RETRY_SCHEDULE: an empty or non-numeric part is refused, not read as 0 s', () => {
    assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '5, 300,1800' }).webhookRetrySchedule, [5, 300, 1800]);
    for (const bad of ['5,,300', '5,300,', ',', 'soon', '5,-1']) refused({ WEBHOOK_RETRY_SCHEDULE: bad }, 'WEBHOOK_RETRY_SCHEDULE');
  });

  it('PLATFORM_API_URL and PLATFORM_API_TOKEN go together', () => {
    refused({ PLATFORM_API_URL: 'https://shop.example.com/admin/api' }, 'PLATFORM_API_URL');
    refused({ PLATFORM_API_TOKEN: 'shpat_x' }, 'PLATFORM_API_URL');
    const both = loadConfig({ PLATFORM_API_URL: 'https://shop.example.com/admin/api', PLATFORM_API_TOKEN: 'shpat_x' });
    assert.equal(both.platformApiToken, 'shpat_x');
  });

  it('the in-memory database, like the embedded one, serves one process', () => {
    refused({ DATABASE_URL: ':memory:', WEB_CONCURRENCY: '2' }, 'WEB_CONCURRENCY');
    refused({ DATABASE_URL: ':memory:', ROLE: 'api' }, 'ROLE');
  });

  it('the configuration and its lists are frozen', () => {
    const config = loadConfig({ CORS_ORIGINS: 'https://a.example' });
    assert.ok(Object.isFrozen(config) && Object.isFrozen(config.corsOrigins) && Object.isFrozen(config.webhookRetrySchedule));
  });
});
