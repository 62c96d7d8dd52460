// The quality report: runs every fixture set through the real API (a server on a temporary SQLite
// file, images served from loopback) and compares each result with its ground truth.
// Usage: npm run quality [-- --fixtures DIR] [--write docs/quality.md]
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { createAccount, createApiKey } from '../src/accounts/accounts.service.js';
import { buildApp } from '../src/app.js';
import type { RgbImage } from '../src/blend/engine/image/image.js';
import { psnr, ssim } from '../src/blend/engine/image/metrics.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { startWorkers } from '../src/jobs/workers.js';

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}
interface Manifest {
  scenario: string;
  blendType: string;
  preserveBackground: boolean;
  images: string[];
  imagesJpeg: string[];
  groundTruth: string;
  cropBox?: Box;
  baselines: Record<string, { psnr: number; ssim: number } | unknown>;
}

const args = process.argv.slice(2);
const option = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const fixtures = path.resolve(option('--fixtures') ?? path.join(import.meta.dirname, '../test/fixtures/blend'));
const writeTo = option('--write');

async function decode(bytes: Buffer | string): Promise<RgbImage> {
  const { data, info } = await sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, data: new Uint8Array(data.buffer, data.byteOffset, data.length) };
}

/** Pixels with any channel ≤ 2 or ≥ 253, as the fixtures count them. */
function clipped(image: RgbImage): { dark: number; bright: number } {
  let dark = 0;
  let bright = 0;
  const d = image.data;
  for (let i = 0; i < d.length; i += 3) {
    if (d[i]! <= 2 || d[i + 1]! <= 2 || d[i + 2]! <= 2) dark++;
    if (d[i]! >= 253 || d[i + 1]! >= 253 || d[i + 2]! >= 253) bright++;
  }
  const n = d.length / 3;
  return { dark: dark / n, bright: bright / n };
}

const sets = fs
  .readdirSync(fixtures, { withFileTypes: true })
  .filter((e) => e.isDirectory() && fs.existsSync(path.join(fixtures, e.name, 'manifest.json')))
  .map((e) => e.name)
  .sort();

const files = http.createServer((req, res) => {
  const file = path.join(fixtures, decodeURIComponent((req.url ?? '/').split('?')[0]!));
  if (!file.startsWith(fixtures) || !fs.existsSync(file)) return res.writeHead(404).end();
  res.writeHead(200).end(fs.readFileSync(file));
});
await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-quality-'));
const config = loadConfig({ PORT: '0', DATA_DIR: dataDir, MONTAGE_LOG_LEVEL: 'silent', MONTAGE_ALLOW_PRIVATE_NETWORK: '1' });
const database = openDatabase(config);
await migrateToLatest(database);
const app = await buildApp(config, { database, logger: false });
const api = await app.listen({ port: 0, host: '127.0.0.1' });
const silent = { info() {}, warn() {}, error() {} };
const workers = startWorkers(database, config, silent);
const account = await createAccount(database.db, { email: 'quality@example.com', plan: 'business' });
const { key } = await createApiKey(database.db, { id: account.id, plan: 'business' }, {});

async function blend(manifest: Manifest, names: string[]) {
  const res = await fetch(`${api}/v1/blend/start`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      projectId: 'quality',
      images: names.map((n) => `${base}/${manifest.scenario}/${n}`),
      options: { blendType: manifest.blendType, preserveBackground: manifest.preserveBackground, outputFormat: 'png' },
    }),
  });
  if (res.status !== 202) throw new Error(`${manifest.scenario}: ${res.status} ${await res.text()}`);
  const { jobId } = (await res.json()) as { jobId: string };
  for (;;) {
    const job = (await (await fetch(`${api}/v1/blend/status/${jobId}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Record<string, any>;
    if (job.status === 'completed') {
      // PUBLIC_URL names port 0 here (the port is chosen at listen): fetch the same path from the server.
      const result = new URL(job.resultUrl as string);
      return { job, image: await decode(Buffer.from(await (await fetch(`${api}${result.pathname}${result.search}`)).arrayBuffer())) };
    }
    if (job.status === 'failed') throw new Error(`${manifest.scenario}: ${job.error.code}: ${job.error.message}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Row {
  set: string;
  input: string;
  blendType: string;
  psnr: number;
  ssim: number;
  score: number;
  components: string;
  ms: number;
  baselines: string;
  target: string;
  pass: boolean;
}
const rows: Row[] = [];
const f2 = (x: number) => x.toFixed(2);
const f4 = (x: number) => x.toFixed(4);

for (const set of sets) {
  const manifest = JSON.parse(fs.readFileSync(path.join(fixtures, set, 'manifest.json'), 'utf8')) as Manifest;
  const truth = await decode(path.join(fixtures, set, manifest.groundTruth));
  const box = manifest.cropBox;
  const b = manifest.baselines as Record<string, { psnr: number; ssim: number }>;
  const baselines = ['firstFrame', 'naiveMean', 'naiveMedian'].map((k) => `${f2(b[k]!.psnr)}/${b[k]!.ssim}`).join(', ');
  for (const [input, names] of [['png', manifest.images], ['jpeg', manifest.imagesJpeg]] as const) {
    const { job, image } = await blend(manifest, names);
    const p = psnr(image, truth, box);
    const s = ssim(image, truth, box);
    let target: string;
    let pass: boolean;
    if (input === 'jpeg') {
      // The targets are set on the lossless inputs; JPEG rows show what lossy inputs cost.
      [target, pass] = ['(lossy inputs: no target)', true];
    } else switch (manifest.blendType) {
      case 'median':
        [target, pass] = ['≥ 45 dB', p >= 45];
        break;
      case 'lighten':
        [target, pass] = ['exact (100 dB)', p >= 100];
        break;
      case 'focus':
        [target, pass] = ['≥ 35 dB', p >= 35];
        break;
      case 'exposure': {
        // The truth is the 0 EV frame (so is the naive median): a fusion is judged by SSIM and by
        // having fewer clipped pixels than the brackets have, as the fixtures' README says.
        const c = clipped(image);
        const perFrame = (manifest.baselines.perFrame ?? []) as Array<{ clipped: { dark: number; bright: number } }>;
        const worst = Math.max(...perFrame.map((f) => f.clipped.dark + f.clipped.bright));
        const mean = perFrame.reduce((sum, f) => sum + f.clipped.dark + f.clipped.bright, 0) / perFrame.length;
        target = `SSIM ≥ 0.9 and clipped (dark+bright) ${f4(c.dark + c.bright)} < brackets' mean ${f4(mean)}`;
        pass = s >= 0.9 && c.dark + c.bright < mean && c.dark + c.bright < worst;
        break;
      }
      default:
        [target, pass] = box
          ? [`≥ 33 dB (crop box; known-warp oracle ${f2(b.oracleAlignedMean?.psnr ?? NaN)} dB)`, p >= 33]
          : [`≥ naive mean ${f2(b.naiveMean!.psnr)} dB`, p >= b.naiveMean!.psnr];
    }
    const q = job.quality as { alignment: number; sharpness: number; exposure: number; ghosting: number | null };
    const components = [q.alignment, q.sharpness, q.exposure, q.ghosting].map((c) => (c === null ? '–' : c.toFixed(2))).join(' / ');
    rows.push({ set, input, blendType: job.blendType, psnr: p, ssim: s, score: job.qualityScore, components, ms: job.processingTime, baselines, target, pass });
    console.log(`${set.padEnd(17)} ${input.padEnd(5)} ${f2(p).padStart(6)} dB  SSIM ${f4(s)}  score ${f4(job.qualityScore)} (${components})  ${String(job.processingTime).padStart(5)} ms  ${input === 'jpeg' ? '' : pass ? 'PASS ' : 'FAIL '}${target}`);
  }
}

// Does a higher score go with a higher PSNR? Concordant pairs among the PNG rows (exposure aside:
// its truth is one of the inputs, so PSNR does not rank a fusion).
const ranked = rows.filter((r) => r.input === 'png' && r.blendType !== 'exposure');
let concordant = 0;
let pairs = 0;
for (let i = 0; i < ranked.length; i++) {
  for (let j = i + 1; j < ranked.length; j++) {
    const a = ranked[i]!;
    const c = ranked[j]!;
    if (a.psnr === c.psnr || a.score === c.score) continue;
    pairs++;
    if (Math.sign(a.psnr - c.psnr) === Math.sign(a.score - c.score)) concordant++;
  }
}
console.log(`score vs PSNR: ${concordant} of ${pairs} pairs of sets ordered alike`);

const table = [
  '| set | input | blend | PSNR dB | SSIM | qualityScore | alignment / sharpness / exposure / ghosting | processing ms | baselines PSNR/SSIM (first, naive mean, naive median) | target | result |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.set} | ${r.input} | ${r.blendType} | ${f2(r.psnr)} | ${f4(r.ssim)} | ${f4(r.score)} | ${r.components} | ${r.ms} | ${r.baselines} | ${r.target} | ${r.pass ? 'pass' : r.input === 'jpeg' ? '–' : 'FAIL'} |`),
  '',
  `Score and PSNR ordered alike for ${concordant} of ${pairs} pairs of sets (PNG inputs, exposure aside).`,
].join('\n');
if (writeTo) {
  const file = path.resolve(writeTo);
  const text = fs.readFileSync(file, 'utf8');
  const start = '<!-- quality:start -->';
  const end = '<!-- quality:end -->';
  const stamp = `Measured ${new Date().toISOString().slice(0, 10)} with \`npm run quality\` (fixtures: ${path.relative(process.cwd(), fixtures) || fixtures}) on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}; processing times are the API's \`processingTime\` on a machine shared with other work.`;
  fs.writeFileSync(file, text.replace(new RegExp(`${start}[\\s\\S]*${end}`), `${start}\n${stamp}\n\n${table}\n${end}`));
}

await app.close();
await workers.stop(1000);
await database.close();
files.close();
fs.rmSync(dataDir, { recursive: true, force: true });
process.exit(rows.every((r) => r.pass) && concordant === pairs ? 0 : 1);
