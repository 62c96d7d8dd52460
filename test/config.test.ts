import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig, parseDuration } from '../src/config.js';

test('defaults follow README.md, Configuration', () => {
  const config = loadConfig({});
  assert.equal(config.port, 8080);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.publicUrl, 'http://127.0.0.1:8080');
  assert.equal(config.dataDir, path.resolve('./data'));
  assert.equal(config.databaseUrl, null);
  assert.equal(config.redisUrl, null);
  assert.equal(config.allowPrivateNetwork, false);
  assert.deepEqual(config.webhookRetrySchedule, [5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6]);
  assert.deepEqual(config.limits.business, { blendPerHour: 1000, eventsPerMinute: 1000, eventsPerDay: 50000 });
  assert.equal(config.blend.maxImages, 10);
  assert.equal(config.blend.maxImageBytes, 25 * 1024 * 1024);
  assert.equal(config.blend.jobTimeoutMs, 120_000);
  assert.equal(config.jobLeaseMs, 30_000);
  assert.equal(config.resultUrlTtlMs, 7 * 86_400_000);
  assert.equal(config.webhookDisableAfterMs, 5 * 86_400_000);
  assert.equal(config.bodyLimitBytes, 1024 * 1024);
  assert.equal(config.sessionTtlMs, 12 * 3_600_000);
  assert.equal(config.shutdownTimeoutMs, 10_000);
  assert.equal(config.databaseWaitMs, 30_000);
  assert.equal(loadConfig({ MONTAGE_DATABASE_WAIT: '0' }).databaseWaitMs, 0);
  assert.equal(config.blend.retentionMs, 30 * 86_400_000);
  assert.equal(loadConfig({ MONTAGE_BLEND_RETENTION: '0' }).blend.retentionMs, 0);
  assert.equal(config.dashboardSignup, false);
});

test('values are parsed and checked', () => {
  const config = loadConfig({
    PORT: '9000',
    PUBLIC_URL: 'https://montage.example.com/',
    MONTAGE_LIMITS_BUSINESS: 'eventsPerMinute=5',
    MONTAGE_ALLOW_PRIVATE_NETWORK: '1',
    DATABASE_URL: 'postgres://u@db:5432/montage',
  });
  assert.equal(config.publicUrl, 'https://montage.example.com');
  assert.deepEqual(config.limits.business, { blendPerHour: 1000, eventsPerMinute: 5, eventsPerDay: 50000 });
  assert.equal(config.allowPrivateNetwork, true);
  assert.throws(() => loadConfig({ PORT: '70000' }), (e: unknown) => e instanceof ConfigError && e.variable === 'PORT');
  assert.throws(() => loadConfig({ MONTAGE_LIMITS_ENTERPRISE: 'cats=1' }), (e: unknown) => e instanceof ConfigError && e.variable === 'MONTAGE_LIMITS_ENTERPRISE');
  assert.throws(() => loadConfig({ REDIS_URL: 'http://x' }), (e: unknown) => e instanceof ConfigError && e.variable === 'REDIS_URL');
  assert.throws(() => loadConfig({ MONTAGE_BLEND_MAX_IMAGES: '1' }), (e: unknown) => e instanceof ConfigError && e.variable === 'MONTAGE_BLEND_MAX_IMAGES');
  assert.throws(() => loadConfig({ MONTAGE_SHUTDOWN_TIMEOUT: 'soon' }), (e: unknown) => e instanceof ConfigError && e.variable === 'MONTAGE_SHUTDOWN_TIMEOUT');
  assert.equal(parseDuration('90s'), 90_000);
  assert.equal(parseDuration('2h'), 7_200_000);
  assert.equal(parseDuration('2 hours'), null);
});

test('MONTAGE_TRUST_PROXY: a hop count or addresses and CIDR ranges; anything else stops the start', () => {
  assert.equal(loadConfig({}).trustProxy, null);
  assert.equal(loadConfig({ MONTAGE_TRUST_PROXY: '1' }).trustProxy, 1);
  assert.deepEqual(loadConfig({ MONTAGE_TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,fd00::/8' }).trustProxy, ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8']);
  for (const bad of ['0', '11', 'yes', '10.0.0.0/33', 'fd00::/129', '10.0.0.0/8/1', 'proxy.example.com']) {
    assert.throws(() => loadConfig({ MONTAGE_TRUST_PROXY: bad }), /MONTAGE_TRUST_PROXY/, bad);
  }
});
