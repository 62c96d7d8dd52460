import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { isPrivateAddress } from '../src/net/addresses.js';
import { addressPolicy, type AddressPolicy, guardedLookup, SafeFetchError, safeFetch } from '../src/net/safe-http.js';

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

/**
 * Every range of the IANA IPv4 and IPv6 Special-Purpose Address Registries (and the deprecated
 * ranges), each with addresses at its edges and the public neighbours just outside it.
 */
const SPECIAL: Record<string, { inside: string[]; outside?: string[] }> = {
  '0.0.0.0/8 this network': { inside: ['0.0.0.0', '0.1.2.3', '0.255.255.255'], outside: ['1.0.0.0'] },
  '10.0.0.0/8 private': { inside: ['10.0.0.0', '10.1.2.3', '10.255.255.255'], outside: ['9.255.255.255', '11.0.0.0'] },
  '100.64.0.0/10 shared (CGN)': { inside: ['100.64.0.0', '100.100.100.200', '100.127.255.255'], outside: ['100.63.255.255', '100.128.0.0'] },
  '127.0.0.0/8 loopback': { inside: ['127.0.0.0', '127.0.0.1', '127.255.255.255'], outside: ['126.255.255.255', '128.0.0.0'] },
  '169.254.0.0/16 link-local, metadata': { inside: ['169.254.0.0', '169.254.169.254', '169.254.255.255'], outside: ['169.253.255.255', '169.255.0.0'] },
  '172.16.0.0/12 private': { inside: ['172.16.0.0', '172.20.1.1', '172.31.255.255'], outside: ['172.15.255.255', '172.32.0.0'] },
  '192.0.0.0/24 protocol assignments': { inside: ['192.0.0.0', '192.0.0.8', '192.0.0.9', '192.0.0.10', '192.0.0.170', '192.0.0.255'], outside: ['191.255.255.255', '192.0.1.0'] },
  '192.0.2.0/24 TEST-NET-1': { inside: ['192.0.2.0', '192.0.2.255'], outside: ['192.0.3.0'] },
  '192.31.196.0/24 AS112-v4': { inside: ['192.31.196.0', '192.31.196.255'], outside: ['192.31.195.255', '192.31.197.0'] },
  '192.52.193.0/24 AMT': { inside: ['192.52.193.0', '192.52.193.255'], outside: ['192.52.192.255', '192.52.194.0'] },
  '192.88.99.0/24 6to4 relay': { inside: ['192.88.99.0', '192.88.99.1', '192.88.99.255'], outside: ['192.88.98.255', '192.88.100.0'] },
  '192.168.0.0/16 private': { inside: ['192.168.0.0', '192.168.1.1', '192.168.255.255'], outside: ['192.167.255.255', '192.169.0.0'] },
  '192.175.48.0/24 AS112 direct delegation': { inside: ['192.175.48.0', '192.175.48.255'], outside: ['192.175.47.255', '192.175.49.0'] },
  '198.18.0.0/15 benchmarking': { inside: ['198.18.0.0', '198.19.255.255'], outside: ['198.17.255.255', '198.20.0.0'] },
  '198.51.100.0/24 TEST-NET-2': { inside: ['198.51.100.0', '198.51.100.255'], outside: ['198.51.99.255', '198.51.101.0'] },
  '203.0.113.0/24 TEST-NET-3': { inside: ['203.0.113.0', '203.0.113.255'], outside: ['203.0.112.255', '203.0.114.0'] },
  '224.0.0.0/4 multicast': { inside: ['224.0.0.0', '224.0.0.251', '239.255.255.255'], outside: ['223.255.255.255'] },
  '240.0.0.0/4 reserved, broadcast': { inside: ['240.0.0.0', '250.1.2.3', '255.255.255.254', '255.255.255.255'] },
  '::/128 unspecified': { inside: ['::', '0:0:0:0:0:0:0:0', '0000:0000:0000:0000:0000:0000:0000:0000'] },
  '::1/128 loopback': { inside: ['::1', '0:0:0:0:0:0:0:1', '0000:0000:0000:0000:0000:0000:0000:0001', '::0001'] },
  '::ffff:0:0/96 IPv4-mapped (of a special IPv4 address)': {
    inside: ['::ffff:127.0.0.1', '::ffff:7f00:1', '::FFFF:7F00:0001', '0:0:0:0:0:ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe', '::ffff:0.0.0.0', '::ffff:192.168.1.1', '::ffff:255.255.255.255'],
    outside: ['::ffff:8.8.8.8', '::ffff:808:808', '::FFFF:1.1.1.1'],
  },
  '::/96 IPv4-compatible (deprecated): refused whatever it embeds': { inside: ['::127.0.0.1', '::7f00:1', '::10.0.0.1', '::8.8.8.8', '::0.0.0.2', '::ffff', '0:0:0:0:0:0:7f00:1', '::a9fe:a9fe'] },
  '::ffff:0:0:0/96 IPv4-translated': { inside: ['::ffff:0:7f00:1', '::ffff:0:127.0.0.1', '::ffff:0:8.8.8.8'] },
  '64:ff9b::/96 NAT64 well-known (of a special IPv4 address)': {
    inside: ['64:ff9b::127.0.0.1', '64:ff9b::7f00:1', '64:ff9b::a9fe:a9fe', '64:ff9b::10.0.0.1', '64:FF9B::C0A8:101', '64:ff9b::0.0.0.0'],
    outside: ['64:ff9b::8.8.8.8', '64:ff9b::808:808'],
  },
  '64:ff9b:1::/48 NAT64 local use': { inside: ['64:ff9b:1::', '64:ff9b:1::8.8.8.8', '64:ff9b:1:ffff:ffff:ffff:ffff:ffff'] },
  '100::/64 discard-only (and 100:0:0:1::/64 dummy)': { inside: ['100::', '100::1', '100::ffff:ffff:ffff:ffff', '100:0:0:1::1'] },
  '2001::/23 IETF protocol assignments, with every sub-range': {
    inside: [
      '2001::', // Teredo 2001::/32
      '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo, embedding a public client
      '2001:0:4136:e378:8000:63bf:80ff:fffe', // Teredo, embedding 127.0.0.1 (obfuscated)
      '2001:1::1', // PCP anycast
      '2001:1::2', // TURN anycast
      '2001:1::3', // DNS-SD SRP anycast
      '2001:2::1', // benchmarking 2001:2::/48
      '2001:3::1', // AMT 2001:3::/32
      '2001:4:112::1', // AS112-v6 2001:4:112::/48
      '2001:10::1', // ORCHID (deprecated) 2001:10::/28
      '2001:20::1', // ORCHIDv2 2001:20::/28
      '2001:30::1', // drone remote ID 2001:30::/28
      '2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff',
    ],
    outside: ['2001:200::1', '2001:4860:4860::8888', '2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
  },
  '2001:db8::/32 documentation': { inside: ['2001:db8::', '2001:db8::1', '2001:DB8:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF'], outside: ['2001:db7:ffff::1', '2001:db9::1'] },
  '2002::/16 6to4 (of a special IPv4 address)': {
    inside: ['2002:7f00:1::', '2002:7f00:0001::1', '2002:a00:1::1', '2002:a9fe:a9fe::', '2002:c0a8:101::1', '2002::', '2002:e000::1'],
    outside: ['2002:808:808::1', '2002:101:101::'],
  },
  '2620:4f:8000::/48 AS112 direct delegation': { inside: ['2620:4f:8000::', '2620:4f:8000:ffff::1'], outside: ['2620:4f:7fff::1', '2620:4f:8001::'] },
  '3fff::/20 documentation': { inside: ['3fff::', '3fff:fff:ffff:ffff::1'], outside: ['3fff:1000::', '3ffe:ffff::1'] },
  '5f00::/16 SRv6 SIDs': { inside: ['5f00::1'] },
  'fc00::/7 unique local': { inside: ['fc00::', 'fd00::1', 'fd00:ec2::254', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'] },
  'fe80::/10 link-local, with zones': { inside: ['fe80::', 'fe80::1', 'FE80::1', 'fe80::1%eth0', 'fe80::1%25', 'febf:ffff::1'] },
  'fec0::/10 site-local (deprecated)': { inside: ['fec0::1', 'feff:ffff::1'] },
  'ff00::/8 multicast': { inside: ['ff00::', 'ff02::1', 'ff05::1:3', 'FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF'] },
  'outside global unicast 2000::/3, unassigned': { inside: ['4000::1', '1::1', '8000::1', 'e000::1'] },
};

test('every special-purpose range of the IANA registries is refused, and its public neighbours are not', () => {
  for (const [range, { inside, outside = [] }] of Object.entries(SPECIAL)) {
    for (const ip of inside) assert.equal(isPrivateAddress(ip), true, `${ip} (${range}) must be refused`);
    for (const ip of outside) assert.equal(isPrivateAddress(ip), false, `${ip} (next to ${range}) is public`);
  }
  for (const ip of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '2606:4700::1%eth0']) {
    assert.equal(isPrivateAddress(ip), false, ip);
  }
  // Not an address in the form a socket or the URL parser gives one: refused rather than guessed at.
  for (const text of ['0x7f.1', '2130706433', '127.1', '0177.0.0.1', 'localhost', '', '::ffff:127.0.0.1.1', '[::1]', 'fe80::1%']) {
    assert.equal(isPrivateAddress(text), true, JSON.stringify(text));
  }
});

test('no spelling of a special address in a URL reaches the network', async (t) => {
  const { port, hits } = await receiver(t);
  const policy = addressPolicy(false);
  const hosts = [
    '[::127.0.0.1]', '[::7f00:1]', '[0:0:0:0:0:0:127.0.0.1]', '[::ffff:127.0.0.1]', '[0:0:0:0:0:FFFF:7F00:1]', '[::ffff:0:127.0.0.1]',
    '[64:ff9b::127.0.0.1]', '[64:ff9b::a9fe:a9fe]', '[2002:7f00:1::]', '[2001:0:4136:e378:8000:63bf:80ff:fffe]', '[FE80::1]', '[fd00:ec2::254]',
    '[0000:0000:0000:0000:0000:0000:0000:0001]', '0x7f.1', '0x7f.0.0.1', '2130706433', '017700000001', '127.000.000.001', '0177.0.0.1',
    '0xa9.0xfe.0xa9.0xfe', '169.254.43518', '0', '0.0.0.0', '10.1', '192.168.1', '[::]', '[::ffff:a9fe:a9fe]',
  ];
  for (const host of hosts) {
    await assert.rejects(safeFetch(`http://${host}:${port}/x`, { ...base, policy }), (err: SafeFetchError) => {
      assert.equal(err.code, 'blocked_address', `${host}: ${err.message}`);
      return true;
    });
  }
  // A zone id is not valid in a URL at all.
  await assert.rejects(safeFetch(`http://[fe80::1%25eth0]:${port}/x`, { ...base, policy }), { code: 'invalid_url' });
  assert.deepEqual(hits, [], 'the receiver got no request');
});

test('the connection is checked by the same policy, before a byte of the request is sent', async (t) => {
  const { port, hits } = await receiver(t);
  const seen: string[] = [];
  // Passes the URL's own check (its first call), then refuses: only the connect-time check can stop it.
  const policy: AddressPolicy = (address) => {
    seen.push(address);
    return seen.length > 1;
  };
  await assert.rejects(safeFetch(`http://127.0.0.1:${port}/x`, { ...base, policy, method: 'POST', body: 'payload' }), (err: SafeFetchError) => {
    assert.equal(err.code, 'blocked_address');
    assert.equal(err.message, '127.0.0.1 is a private or reserved address');
    return true;
  });
  assert.deepEqual(seen, ['127.0.0.1', '127.0.0.1'], 'the URL and the socket address went through the policy');
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(hits, [], 'no request reached the server');
});

test('a name resolving to a private address is refused without telling the client the address', async () => {
  const lookup = guardedLookup(addressPolicy(false));
  const error = await new Promise<SafeFetchError>((resolve) => lookup('localhost', { family: 0 }, (err) => resolve(err as unknown as SafeFetchError)));
  assert.ok(error instanceof SafeFetchError);
  assert.equal(error.code, 'blocked_address');
  assert.equal(error.message, 'localhost resolves to a private or reserved address');
  assert.doesNotMatch(error.message, /127\.0\.0\.1|::1/);
  assert.match(error.internal, /localhost resolves to (127\.0\.0\.1|::1)/, 'the log gets the address');
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

test('only http(s), no credentials, no port 0, bounded length', async () => {
  const policy = addressPolicy(true);
  for (const url of ['file:///etc/passwd', 'ftp://example.com/x', 'gopher://127.0.0.1/', 'http://user:pass@127.0.0.1/', 'https://example.com:0/', 'http://127.0.0.1:00/', `http://127.0.0.1/${'a'.repeat(3000)}`, 'not a url']) {
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
