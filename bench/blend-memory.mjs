// Peak memory of one blend job, per blend type and size: the figures behind the job pixel budget
// (MONTAGE_BLEND_MAX_JOB_PIXELS) and the admission estimate of src/blend/memory.ts (docs/blend.md,
// "Memory"). Each measurement runs in a fresh process: the engine (src/blend/pipeline.ts) is warmed
// up with a small job of the same type (threads, WebAssembly modules, the segmentation model), the
// heap collected, the resident set read; then the measured job runs (images over loopback) and
// the process's peak resident set (getrusage maxRSS, every thread included) is read.
// Job memory = peak - resident set before the job; per pixel = job memory / (frames × pixels).
//
//   node --import tsx bench/blend-memory.mjs [--types median,exposure] [--sizes 5x2000x1500,10x3000x2000]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BASE = path.join(ROOT, 'test/fixtures/blend/handheld-mean/gt.png');
const TYPES = ['median', 'mean', 'lighten', 'overlay', 'exposure', 'focus', 'composite'];
const SIZES = ['5x2000x1500', '10x3000x2000', '5x4000x3000'];
const GAINS = [0.75, 1, 1.35, 0.85, 1.2, 0.8, 1.25, 0.9, 1.1, 1];

const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};

/** Deterministic frames of one scene: the photo scaled up with fixed texture, each frame shifted a few pixels (so alignment warps it) and, for exposure, brightened or darkened. */
async function makeFrames(dir, frames, width, height, exposure) {
  fs.mkdirSync(dir, { recursive: true });
  const pad = 4 * frames;
  const { data, info } = await sharp(BASE).resize(width + pad, height + pad, { fit: 'fill' }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let seed = 12345;
  for (let i = 0; i < data.length; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    data[i] = Math.max(0, Math.min(255, data[i] + ((seed >>> 24) % 25) - 12));
  }
  const files = [];
  for (let i = 0; i < frames; i++) {
    let frame = sharp(data, { raw: { width: info.width, height: info.height, channels: 3 } }).extract({ left: 3 * i, top: 2 * i, width, height });
    if (exposure) frame = sharp(await frame.raw().toBuffer(), { raw: { width, height, channels: 3 } }).linear(GAINS[i % GAINS.length], 0);
    const file = path.join(dir, `${i}.jpg`);
    await frame.jpeg({ quality: 92 }).toFile(file);
    files.push(file);
  }
  return files;
}

function serve(files) {
  const server = http.createServer((req, res) => {
    const file = files[Number(req.url.slice(1))];
    if (!file) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'image/jpeg' }).end(fs.readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function child() {
  const [type, smallDir, bigDir] = process.argv.slice(3);
  const { BlendEngine } = await import('../src/blend/pipeline.ts');
  const { loadConfig } = await import('../src/config.ts');
  const { addressPolicy } = await import('../src/net/safe-http.ts');
  const config = loadConfig({ MONTAGE_BLEND_MAX_JOB_PIXELS: '2000000000', MONTAGE_BLEND_MAX_PIXELS: '500000000' });
  const engine = new BlendEngine(config.blend, addressPolicy(true), 'http://montage.invalid');
  const list = (dir) => fs.readdirSync(dir).sort((a, b) => parseInt(a) - parseInt(b)).map((f) => path.join(dir, f));
  const small = list(smallDir);
  const big = list(bigDir);
  const server = await serve([...small, ...big]);
  const base = `http://127.0.0.1:${server.address().port}`;
  const spec = (from, count) => ({
    images: Array.from({ length: count }, (_, i) => `${base}/${from + i}`),
    blendType: type,
    align: true,
    preserveBackground: type === 'composite',
    deghost: true,
    outputFormat: 'jpeg',
  });
  await engine.run(spec(0, small.length));
  globalThis.gc?.();
  await new Promise((r) => setTimeout(r, 200));
  const before = process.memoryUsage().rss;
  const maxBefore = process.resourceUsage().maxRSS * 1024;
  const started = performance.now();
  const result = await engine.run(spec(small.length, big.length));
  const ms = performance.now() - started;
  const peak = process.resourceUsage().maxRSS * 1024;
  server.close();
  await engine.close();
  process.stdout.write(`${JSON.stringify({ before, maxBefore, peak, ms, used: result.blendTypeUsed })}\n`);
}

async function main() {
  const types = (arg('types') ?? TYPES.join(',')).split(',');
  const sizes = (arg('sizes') ?? SIZES.join(',')).split(',').map((s) => s.split('x').map(Number));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-blend-memory-'));
  process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
  const smallDir = path.join(tmp, 'small');
  const smallExposure = path.join(tmp, 'small-exposure');
  await makeFrames(smallDir, 3, 480, 320, false);
  await makeFrames(smallExposure, 3, 480, 320, true);
  const rows = [];
  console.log(`node ${process.version}, ${os.availableParallelism()} cores, MONTAGE_BLEND_THREADS default (${os.availableParallelism()}), sharp ${sharp.versions.sharp}`);
  console.log('| type | frames × size | pixels | RSS before | peak RSS | job memory | bytes / pixel / frame | time |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const [frames, width, height] of sizes) {
    for (const type of types) {
      const exposure = type === 'exposure';
      const dir = path.join(tmp, `${frames}x${width}x${height}${exposure ? '-exposure' : ''}`);
      if (!fs.existsSync(dir)) await makeFrames(dir, frames, width, height, exposure);
      const run = spawnSync(process.execPath, ['--expose-gc', '--max-semi-space-size=64', '--import', 'tsx', fileURLToPath(import.meta.url), '--child', type, exposure ? smallExposure : smallDir, dir], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, MONTAGE_LOG_LEVEL: 'silent' },
        maxBuffer: 1 << 24,
      });
      const line = run.stdout.trim().split('\n').at(-1);
      if (run.status !== 0 || !line?.startsWith('{')) {
        console.log(`| ${type} | ${frames} × ${width}×${height} | failed: ${(run.stderr || run.stdout).trim().split('\n').slice(-12).join(' ')} |`);
        continue;
      }
      const m = JSON.parse(line);
      const pixels = frames * width * height;
      const job = m.peak - m.before;
      const row = { type, frames, width, height, pixels, before: m.before, peak: m.peak, job, perPixel: job / pixels, ms: m.ms };
      rows.push(row);
      const mb = (b) => `${Math.round(b / 1e6)} MB`;
      console.log(`| ${type} | ${frames} × ${width}×${height} | ${(pixels / 1e6).toFixed(0)} MP | ${mb(m.before)} | ${mb(m.peak)} | ${mb(job)} | ${row.perPixel.toFixed(1)} | ${(m.ms / 1000).toFixed(1)} s |`);
    }
  }
  const worst = {};
  for (const r of rows) worst[r.type] = Math.max(worst[r.type] ?? 0, r.perPixel);
  console.log(`\nworst bytes per pixel per frame: ${JSON.stringify(Object.fromEntries(Object.entries(worst).map(([k, v]) => [k, Number(v.toFixed(1))])))}`);
}

if (process.argv[2] === '--child') await child();
else await main();
