#!/usr/bin/env node
// How long the scanner page takes to check one signed ticket code in the browser: the verifier of
// web/scanner/src/verify.ts (WebCrypto Ed25519) in Debian's Chromium, on 1000 codes signed here with
// node:crypto, against a revocation list of 5000 serials. Prints the median, p95 and max of the 1000.
// Usage: node bench/scanner-verify.mjs   (needs /usr/bin/chromium; no build needed). `npm run bench --
// door` (bench/door.mjs) runs it with the other door benchmarks and writes their docs section.
import { generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { chromium } from 'playwright-core';
import ts from 'typescript';
import { runAlone } from './lib.mjs';

export const CODES = 1000;
export const REVOKED = 5000;
const WARMUP = 50;
const root = path.resolve(import.meta.dirname, '..');

/** A module of the repository as the page bundles it, only without its types: `/x/y.js` is x/y.ts (imports included, as the browser asks for them). */
function moduleJs(url) {
  const file = path.join(root, url.replace(/\.js$/, '.ts'));
  if (!file.startsWith(root + path.sep) || !/^\/(src|web\/scanner\/src)\/[\w/.-]+\.js$/.test(url) || !fs.existsSync(file)) return undefined;
  return ts.transpileModule(fs.readFileSync(file, 'utf8'), { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } }).outputText;
}

/**
 * Signs the codes, verifies each of them once in Chromium and resolves to
 * { version, isolated, median, p95, max } (ms). Throws if any code does not verify.
 */
export async function verifyInBrowser() {
  // A UUID's 16 bytes stand for the TypeIDs: the verifier turns them into tkt_/evt_/tt_ IDs itself.
  const uuidBytes = () => Buffer.from(randomUUID().replaceAll('-', ''), 'hex');
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const kid = randomBytes(4);
  const eventBytes = uuidBytes();
  const typeBytes = uuidBytes();
  const codes = [];
  for (let i = 0; i < CODES; i++) {
    const payload = Buffer.alloc(69);
    payload[0] = 1;
    kid.copy(payload, 1);
    randomBytes(8).copy(payload, 5);
    uuidBytes().copy(payload, 13);
    eventBytes.copy(payload, 29);
    typeBytes.copy(payload, 45);
    codes.push(`M1${Buffer.concat([payload, sign(null, payload, privateKey)]).toString('base64url')}`);
  }
  const revoked = Array.from({ length: REVOKED }, () => randomBytes(8).toString('base64url')).sort();
  const key = { kid: kid.toString('hex'), algorithm: 'Ed25519', publicKey: Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url').toString('base64url'), status: 'active' };

  // Served over loopback (a secure context, for WebCrypto) and cross-origin isolated, so that
  // performance.now() has its fine resolution.
  const server = http.createServer((req, res) => {
    const headers = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };
    const js = req.url.endsWith('.js') ? moduleJs(req.url) : undefined;
    if (js !== undefined) return res.writeHead(200, { ...headers, 'content-type': 'text/javascript' }).end(js);
    res.writeHead(200, { ...headers, 'content-type': 'text/html' }).end('<!doctype html><title>verify bench</title>');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    const result = await page.evaluate(
      async ({ codes, key, revoked, eventBytes, warmup }) => {
        const { Verifier } = await import('/web/scanner/src/verify.js');
        const { typeIdFromBytes } = await import('/src/typeid.js');
        const eventId = typeIdFromBytes('evt', new Uint8Array(eventBytes));
        const verifier = await Verifier.create(eventId, [key], revoked);
        const now = Math.floor(Date.now() / 1000);
        // Warm-up: the first calls pay for compiling the code.
        for (const code of codes.slice(0, warmup)) await verifier.verify(code, now);
        const times = [];
        for (const code of codes) {
          const start = performance.now();
          const verdict = await verifier.verify(code, now);
          times.push(performance.now() - start);
          if (!verdict.ok) throw new Error(`refused: ${verdict.reason}`);
        }
        times.sort((a, b) => a - b);
        return { isolated: globalThis.crossOriginIsolated, median: times[times.length >> 1], p95: times[Math.floor(times.length * 0.95)], max: times.at(-1) };
      },
      { codes, key, revoked, eventBytes: [...eventBytes], warmup: WARMUP },
    );
    return { version: browser.version(), ...result };
  } finally {
    await browser.close();
    server.close();
  }
}

await runAlone(import.meta.url, async () => {
  const result = await verifyInBrowser();
  console.log(`Chromium ${result.version}${result.isolated ? '' : ' (not cross-origin isolated: coarse timer)'}: verify one signed code, ${CODES} codes, ${REVOKED} revoked serials`);
  console.log(`median ${result.median.toFixed(3)} ms · p95 ${result.p95.toFixed(3)} ms · max ${result.max.toFixed(3)} ms`);
});
