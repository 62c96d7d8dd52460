import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { isPrivateAddress } from '../src/net/addresses.js';
import { addressPolicy, type AddressPolicy, safeFetch } from '../src/net/safe-http.js';

/** A loopback server that records every request it gets. */
async function receiver(t: TestContext, handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_q, s) => s.end('ok')) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  return { port: (server.address() as AddressInfo).port, hits };
}

const base = { timeoutMs: 2000, maxBytes: 1024, maxRedirects: 3 };

test('private, loopback, link-local and metadata addresses are recognised in every form', () => {
  for (const ip of ['127.0.0.1', '127.255.255.254', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fd00:ec2::254', 'fc00::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '64:ff9b::a9fe:a9fe', '2002:7f00:1::', '2001:db8::1', '64:ff9b:1::a9fe:a9fe', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '::ffff:0:7f00:1']) {
    assert.equal(isPrivateAddress(ip), true, ip);
  }
  for (const ip of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8', '2a00:1450:4001:80b::200e']) {
    assert.equal(isPrivateAddress(ip), false, ip);
  }
});

test('every spelling of loopback is refused before any request is made', async (t) => {
  const { port, hits } = await receiver(t);
  const policy = addressPolicy(false);
  for (const host of ['127.0.0.1', '127.1', '2130706433', '0x7f000001', '0177.0.0.1', '[::1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', 'localhost', 'localhost.', 'LOCALHOST', 'app.localhost', '[0:0:0:0:0:0:0:1]']) {
    await assert.rejects(safeFetch(`http://${host}:${port}/x`, { ...base, policy }), { code: 'blocked_address' }, host);
  }
  await assert.rejects(safeFetch(`http://169.254.169.254/latest/meta-data/`, { ...base, policy }), { code: 'blocked_address' });
  assert.deepEqual(hits, [], 'the receiver got no request');
});

test('only http(s), no credentials, bounded length', async () => {
  const policy = addressPolicy(true);
  for (const url of ['file:///etc/passwd', 'ftp://example.com/x', 'gopher://127.0.0.1/', 'http://user:pass@127.0.0.1/', `http://127.0.0.1/${'a'.repeat(3000)}`, 'not a url']) {
    await assert.rejects(safeFetch(url, { ...base, policy }), { code: 'invalid_url' }, url.slice(0, 40));
  }
});

test('with private networks allowed, loopback works; bodies and time are bounded', async (t) => {
  const { port } = await receiver(t, (req, res) => {
    if (req.url === '/big') return res.end('x'.repeat(5000));
    if (req.url === '/slow') return setTimeout(() => res.end('late'), 1500);
    res.end('hello');
  });
  const policy = addressPolicy(true);
  const ok = await safeFetch(`http://127.0.0.1:${port}/`, { ...base, policy });
  assert.equal(ok.status, 200);
  assert.equal(ok.body.toString(), 'hello');
  await assert.rejects(safeFetch(`http://127.0.0.1:${port}/big`, { ...base, policy }), { code: 'too_large' });
  const cut = await safeFetch(`http://127.0.0.1:${port}/big`, { ...base, policy, truncate: true });
  assert.equal(cut.body.length, 1024);
  assert.equal(cut.truncated, true);
  await assert.rejects(safeFetch(`http://127.0.0.1:${port}/slow`, { ...base, timeoutMs: 300, policy }), { code: 'timeout' });
});

test('redirects are re-checked at every hop, bounded, or not followed at all', async (t) => {
  // This policy admits 127.0.0.1 only, standing in for "public": 127.0.0.2 plays a private address.
  const only1: AddressPolicy = (ip) => ip !== '127.0.0.1';
  const target = await receiver(t);
  const hop = await receiver(t, (req, res) => {
    const to: Record<string, string> = {
      '/to-private': `http://127.0.0.2:${target.port}/secret`,
      '/to-private-name': `http://localhost:${target.port}/secret`,
      '/loop': '/loop',
      '/to-ok': `http://127.0.0.1:${target.port}/fine`,
    };
    res.writeHead(302, { location: to[req.url ?? ''] ?? '/' }).end();
  });
  await assert.rejects(safeFetch(`http://127.0.0.1:${hop.port}/to-private`, { ...base, policy: only1 }), { code: 'blocked_address' });
  await assert.rejects(safeFetch(`http://127.0.0.1:${hop.port}/to-private-name`, { ...base, policy: only1 }), { code: 'blocked_address' });
  await assert.rejects(safeFetch(`http://127.0.0.1:${hop.port}/loop`, { ...base, policy: only1 }), { code: 'too_many_redirects' });
  assert.deepEqual(target.hits, []);
  const followed = await safeFetch(`http://127.0.0.1:${hop.port}/to-ok`, { ...base, policy: only1 });
  assert.equal(followed.status, 200);
  assert.deepEqual(target.hits, ['/fine']);
  const notFollowed = await safeFetch(`http://127.0.0.1:${hop.port}/to-ok`, { ...base, maxRedirects: 0, policy: only1 });
  assert.equal(notFollowed.status, 302);
  assert.deepEqual(target.hits, ['/fine']);
});
