// The quality reports, every job through the real API (a server on a temporary SQLite file, images
// served from loopback): first every fixture set against its ground truth, then the generalisation
// matrix (scripts/quality/matrix.ts: photos × scenarios × random draws).
// Usage: npm run quality [-- --fixtures DIR] [--draws N] [--first-draw N] [--width W] [--photos a,b,…] [--write docs/blend.md]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clippedFractions, psnr, ssim } from '../src/blend/engine/image/metrics.js';
import { WorkerPool } from '../src/blend/engine/threads/pool.js';
import { decode, startQualityApi } from './quality/api.js';
import { markdown, PHOTOS_DIR, photoFiles, runMatrix, summarise } from './quality/matrix.js';

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
const draws = Number(option('--draws') ?? 3);
const firstDraw = Number(option('--first-draw') ?? 0);
// Draw numbers go into the cases' seeds below 1000 (matrix.ts caseSeed).
for (const [name, value, least] of [['--draws', draws, 1], ['--first-draw', firstDraw, 0]] as const) {
  if (!Number.isInteger(value) || value < least || firstDraw + draws > 1000) {
    console.error(`${name}: a whole number from ${least}, with --first-draw + --draws at most 1000; got ${option(name)}`);
    process.exit(2);
  }
}
const width = Number(option('--width') ?? 416);
const chosen = option('--photos')?.split(',').map((name) => path.join(PHOTOS_DIR, `${name}.jpg`));

const sets = fs
  .readdirSync(fixtures, { withFileTypes: true })
  .filter((e) => e.isDirectory() && fs.existsSync(path.join(fixtures, e.name, 'manifest.json')))
  .map((e) => e.name)
  .sort();

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-quality-'));
const api = await startQualityApi({ DATA_DIR: dataDir });
function blend(manifest: Manifest, names: string[]) {
  const urls = api.serve(names.map((n) => fs.readFileSync(path.join(fixtures, manifest.scenario, n))));
  return api.blend(urls, { blendType: manifest.blendType, preserveBackground: manifest.preserveBackground }).finally(() => api.forget(urls));
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
        const c = clippedFractions(image);
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

// The matrix: the engine on photos and draws it was not tuned on.
const pool = new WorkerPool(2);
const photos = chosen ?? photoFiles();
const started = Date.now();
const cases = await runMatrix({
  api,
  pool,
  photos,
  draws,
  firstDraw,
  width,
  onCase: (c) =>
    console.log(
      `${c.scenario.padEnd(22)} ${c.photo.padEnd(18)} draw ${c.draw} q${c.jpegQuality}  ${c.result ? `${f2(c.result.psnr).padStart(6)} dB` : 'FAILED   '}  naive ${c.best} ${f2(c.baselines[c.best].psnr)}  oracle ${f2(c.oracle.psnr)}  [${c.methods ?? c.error}]  ${c.pass ? 'pass' : `MISS ${c.why}`}`,
    ),
});
const report = markdown(cases);
console.log(report);
const minutes = ((Date.now() - started) / 60_000).toFixed(1);

if (writeTo) {
  const file = path.resolve(writeTo);
  let text = fs.readFileSync(file, 'utf8');
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}`;
  const put = (marker: string, body: string) => {
    const [start, end] = [`<!-- ${marker}:start -->`, `<!-- ${marker}:end -->`];
    text = text.replace(new RegExp(`${start}[\\s\\S]*${end}`), `${start}\n${body}\n${end}`);
  };
  const date = new Date().toISOString().slice(0, 10);
  put('quality', `Measured ${date} with \`npm run quality\` (fixtures: ${path.relative(process.cwd(), fixtures) || fixtures}) on ${machine}; processing times are the API's \`processingTime\` on a machine shared with other work.\n\n${table}`);
  const command = `npm run quality${chosen || draws !== 3 || firstDraw !== 0 || width !== 416 ? ` -- ${[chosen ? `--photos ${option('--photos')}` : '', draws !== 3 ? `--draws ${draws}` : '', firstDraw !== 0 ? `--first-draw ${firstDraw}` : '', width !== 416 ? `--width ${width}` : ''].filter(Boolean).join(' ')}` : ''}`;
  put('quality-matrix', `Measured ${date} with \`${command}\` on ${machine}: ${photos.length} photos × ${summarise(cases).length} scenarios × ${draws} draws${firstDraw !== 0 ? ` (from draw ${firstDraw})` : ''} at ${width} px wide, ${cases.length} jobs in ${minutes} min.\n\n${report}`);
  fs.writeFileSync(file, text);
}

await api.close();
await pool.close();
fs.rmSync(dataDir, { recursive: true, force: true });
const matrixMet = cases.every((c) => c.pass) && summarise(cases).every((s) => s.withinOracle);
process.exit(rows.every((r) => r.pass) && concordant === pairs && matrixMet ? 0 : 1);
