// Blend benchmark (docs/benchmarks.md, "Blend"): five 4000×3000 JPEGs served from loopback, each blend
// type end to end through a real Montage server process (POST /v1/blend/start → completed), beside
// ImageMagick 6 (`convert -evaluate-sequence`) and enfuse on the same files in the same run; then
// the HTTP server's responsiveness while two such jobs run. See bench/README.md.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import {
  autocannon,
  build,
  checkedJson,
  commandLine,
  createAccountAndKey,
  freePort,
  lastStages,
  machine,
  makeTempDir,
  median,
  montageNodeFlags,
  montageArgs,
  montageEnv,
  packageVersion,
  processMemory,
  ROOT,
  seconds,
  startProcess,
  tables,
  waitForHttp,
} from './lib.mjs';

export const name = 'blend';
export const description = 'Blend engine: 5 × 4000×3000 JPEGs end to end per blend type, vs ImageMagick and enfuse; GET latency during blends';

const FIXTURES = path.resolve(ROOT, 'test/fixtures/blend');
const WIDTH = 4000;
const HEIGHT = 3000;
const FRAMES = 5;
const TARGETS_S = { median: 1.0, mean: 0.8, lighten: 0.8, exposure: 2.5, focus: 3.0, composite: 3.0 };
/** Types measured on the drifted frames too, and how much longer (s) the aligned job may take than the same job with `align: false`. */
const DRIFTED_TYPES = ['median', 'mean'];
const ALIGN_COST_TARGET_S = 0.3;
const PEAK_MEMORY_TARGET = 1.2e9;
const GET_P99_TARGET_MS = 50;

const log = (line) => process.stdout.write(`${line}\n`);
const s = (ms) => (ms / 1000).toFixed(2);

// ---------------------------------------------------------------------------------------------
// Inputs: deterministic 12 MP frames made from the fixture photos (mulberry32 noise), as JPEG q92.

function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Adds uniform noise of ±amplitude to every channel (sensor noise, and texture that JPEG must keep). */
function addNoise(data, amplitude, seed) {
  const random = mulberry32(seed);
  const out = Buffer.allocUnsafe(data.length);
  for (let i = 0; i < data.length; i++) out[i] = Math.max(0, Math.min(255, data[i] + Math.round((random() * 2 - 1) * amplitude)));
  return out;
}

const RAW = { raw: { width: WIDTH, height: HEIGHT, channels: 3 } };

async function scene(file) {
  const base = await sharp(path.join(FIXTURES, file)).removeAlpha().resize(WIDTH, HEIGHT, { fit: 'cover', kernel: 'lanczos3' }).raw().toBuffer();
  return addNoise(base, 10, 1); // texture fixed across frames
}

async function writeJpeg(data, file) {
  await sharp(data, RAW).jpeg({ quality: 92 }).toFile(file);
}

// A tripod that drifts between shots: frame f's content moves by DRIFT[f] (dx, dy px; degrees about
// the centre, clockwise in image coordinates). Shifts of 3–15 px, a rotation of at most 0.5° on some.
const DRIFT = [
  [0, 0, 0],
  [3, -4, 0],
  [-7, 6, 0.2],
  [11, 9, 0],
  [-15, -12, -0.5],
];

/**
 * `data` moved by (dx, dy) and turned by `degrees` about the centre: each output pixel takes the
 * bilinear sample of the source where the inverse motion sends it, edges replicated.
 */
function drift(data, dx, dy, degrees) {
  const out = Buffer.allocUnsafe(data.length);
  const [c, s] = [Math.cos((degrees * Math.PI) / 180), Math.sin((degrees * Math.PI) / 180)];
  const [cx, cy] = [(WIDTH - 1) / 2, (HEIGHT - 1) / 2];
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) {
      const [u, v] = [x - dx - cx, y - dy - cy];
      const sx = Math.min(WIDTH - 1, Math.max(0, c * u + s * v + cx));
      const sy = Math.min(HEIGHT - 1, Math.max(0, -s * u + c * v + cy));
      const [x0, y0] = [Math.min(WIDTH - 2, Math.floor(sx)), Math.min(HEIGHT - 2, Math.floor(sy))];
      const [fx, fy] = [sx - x0, sy - y0];
      const p = (y0 * WIDTH + x0) * 3;
      const q = p + WIDTH * 3;
      for (let k = 0; k < 3; k++) {
        const top = data[p + k] * (1 - fx) + data[p + 3 + k] * fx;
        const bottom = data[q + k] * (1 - fx) + data[q + 3 + k] * fx;
        out[(y * WIDTH + x) * 3 + k] = Math.round(top * (1 - fy) + bottom * fy);
      }
    }
  }
  return out;
}

/**
 * Five frames per kind of input: a static scene with passers-by, the same scene as a drifting
 * tripod sees it (DRIFT), an exposure bracket, a focus bracket, a group shot.
 */
/**
 * The frames `<set>-N.jpg` (a set of makeInputs) in `dir`, or, without `dir`, in a temporary
 * directory makeInputs fills; `remove` deletes what was made (nothing for a given `dir`).
 */
export async function inputFrames(dir, set) {
  let remove = async () => {};
  if (!dir) {
    ({ dir, remove } = makeTempDir(`montage-bench-${set}-`));
    await makeInputs(dir);
  }
  const frames = fs.readdirSync(dir).filter((f) => new RegExp(`^${set}-\\d+\\.jpg$`).test(f)).sort();
  if (frames.length === 0) throw new Error(`no ${set}-N.jpg in ${dir}`);
  return { dir, frames, remove };
}

export async function makeInputs(dir) {
  const started = Date.now();
  const coffee = await scene('median-crowd/gt.png');
  const rocket = await sharp(path.join(FIXTURES, 'noise-mean/gt.png')).resize(900, 700, { fit: 'cover' }).raw().toBuffer();
  const person = await sharp(path.join(FIXTURES, 'exposure-bracket/gt.png')).resize(900, 900).raw().toBuffer();
  const sets = { scene: [], drifted: [], bracket: [], focus: [], group: [] };
  for (let f = 0; f < FRAMES; f++) {
    // Scene: sensor noise per frame and two passers-by (patches of another photo) at places of their own.
    const frame = addNoise(coffee, 4, 100 + f);
    for (const [x, y] of [[300 + f * 700, 400 + ((f * 997) % 1500)], [3000 - f * 600, 1800 - ((f * 613) % 900)]]) {
      for (let r = 0; r < 700; r++) rocket.copy(frame, ((y + r) * WIDTH + x) * 3, r * 900 * 3, r * 900 * 3 + 900 * 3);
    }
    sets.scene.push(path.join(dir, `scene-${f + 1}.jpg`));
    await writeJpeg(frame, sets.scene.at(-1));
    // Drifted: the same frame, passers-by and all, as the camera moved.
    sets.drifted.push(path.join(dir, `drifted-${f + 1}.jpg`));
    await writeJpeg(drift(frame, ...DRIFT[f]), sets.drifted.at(-1));
    // Bracket: −2, −1, 0, +1, +2 EV in linear light.
    const gain = 2 ** (f - 2);
    const lut = Uint8Array.from({ length: 256 }, (_, v) => Math.round(255 * Math.min(1, ((v / 255) ** 2.2 * gain)) ** (1 / 2.2)));
    const bracket = Buffer.allocUnsafe(coffee.length);
    for (let i = 0; i < coffee.length; i++) bracket[i] = lut[coffee[i]];
    sets.bracket.push(path.join(dir, `bracket-${f + 1}.jpg`));
    await writeJpeg(bracket, sets.bracket.at(-1));
    // Focus: sharp in one horizontal band, blurred elsewhere.
    const blurred = await sharp(coffee, RAW).blur(6).raw().toBuffer();
    const band = [Math.floor((f * HEIGHT) / FRAMES), Math.floor(((f + 1) * HEIGHT) / FRAMES)];
    coffee.copy(blurred, band[0] * WIDTH * 3, band[0] * WIDTH * 3, band[1] * WIDTH * 3);
    sets.focus.push(path.join(dir, `focus-${f + 1}.jpg`));
    await writeJpeg(blurred, sets.focus.at(-1));
    // Group: one person per frame, at a place of their own.
    const group = addNoise(coffee, 4, 200 + f);
    const [px, py] = [100 + f * 740, 1900];
    for (let r = 0; r < 900; r++) person.copy(group, ((py + r) * WIDTH + px) * 3, r * 900 * 3, (r + 1) * 900 * 3);
    sets.group.push(path.join(dir, `group-${f + 1}.jpg`));
    await writeJpeg(group, sets.group.at(-1));
  }
  const bytes = sets.scene.reduce((sum, f) => sum + fs.statSync(f).size, 0);
  log(`  inputs: ${FRAMES} × ${WIDTH}×${HEIGHT} JPEG q92 per set (scene set ${(bytes / FRAMES / 1e6).toFixed(1)} MB a frame), made in ${s(Date.now() - started)} s`);
  return sets;
}

// ---------------------------------------------------------------------------------------------
// Anchors: the tools photographers use today, on the same files.

function timeCommand(command, args) {
  const started = process.hrtime.bigint();
  const result = spawnSync('/usr/bin/time', ['-f', '%M', command, ...args], { encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.stderr}`);
  const peakKb = Number(result.stderr.trim().split('\n').pop());
  return { ms, peak: peakKb * 1024 };
}

function ensureAnchors() {
  const missing = ['/usr/bin/convert', '/usr/bin/enfuse'].filter((f) => !fs.existsSync(f));
  if (missing.length === 0) return;
  log(`  installing imagemagick and enfuse (Debian packages) for the anchors: ${missing.join(', ')} missing`);
  const apt = spawnSync('apt-get', ['install', '-y', '-q', 'imagemagick', 'enfuse'], { encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (apt.status !== 0) throw new Error(`apt-get install imagemagick enfuse failed:\n${apt.stdout}${apt.stderr}`);
}

function anchors(sets, dir) {
  const out = (name) => path.join(dir, name);
  const magick = (files, op) => timeCommand('/usr/bin/convert', [...files, '-evaluate-sequence', op, out(`magick-${op}.jpg`)]);
  return {
    median: { tool: 'ImageMagick', ...magick(sets.scene, 'median') },
    mean: { tool: 'ImageMagick', ...magick(sets.scene, 'mean') },
    'drifted median': { tool: 'ImageMagick', ...magick(sets.drifted, 'median') },
    'drifted mean': { tool: 'ImageMagick', ...magick(sets.drifted, 'mean') },
    lighten: { tool: 'ImageMagick', ...magick(sets.scene, 'max') },
    exposure: { tool: 'enfuse', ...timeCommand('/usr/bin/enfuse', ['-o', out('enfuse-exposure.tif'), ...sets.bracket]) },
    focus: {
      tool: 'enfuse',
      ...timeCommand('/usr/bin/enfuse', ['--exposure-weight=0', '--saturation-weight=0', '--contrast-weight=1', '--hard-mask', '-o', out('enfuse-focus.tif'), ...sets.focus]),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Montage

export function fileServer(dir) {
  const server = http.createServer((req, res) => {
    const file = path.join(dir, path.basename(req.url ?? '/'));
    if (!fs.existsSync(file)) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': fs.statSync(file).size });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, base: `http://127.0.0.1:${server.address().port}` })));
}

async function startMontage(dir, extra = {}) {
  const port = await freePort();
  const storage = { montageDir: makeTempDir('montage-bench-blend-').dir };
  const logLevel = process.env.BENCH_STAGES === '1' ? { MONTAGE_LOG_LEVEL: 'info' } : {};
  const env = montageEnv('sqlite', storage, port, { MONTAGE_ALLOW_PRIVATE_NETWORK: '1', ...logLevel, ...extra });
  const apiKey = await createAccountAndKey(env);
  const proc = startProcess('montage serve', process.execPath, montageArgs('serve'), { env });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(proc, `${base}/healthz`);
  return { proc, base, apiKey };
}

export async function runJob(montage, images, blendType, sampleMemory, align = true, extra = {}) {
  const headers = { authorization: `Bearer ${montage.apiKey}`, 'content-type': 'application/json' };
  let peak = 0;
  const sampler = sampleMemory
    ? setInterval(() => {
        const mem = processMemory(montage.proc.child.pid);
        if (mem) peak = Math.max(peak, mem.rss);
      }, 10)
    : null;
  const started = performance.now();
  const job = await checkedJson(
    await fetch(`${montage.base}/v1/blend/start`, { method: 'POST', headers, body: JSON.stringify({ projectId: 'bench', images, options: { blendType, ...(align ? {} : { align: false }), ...extra } }) }),
    'POST /v1/blend/start',
    202,
  );
  for (;;) {
    const status = await checkedJson(await fetch(`${montage.base}/v1/blend/status/${job.jobId}`, { headers }), 'GET /v1/blend/status');
    if (status.status === 'completed' || status.status === 'failed') {
      const ms = performance.now() - started;
      if (sampler) clearInterval(sampler);
      if (status.status === 'failed') throw new Error(`${blendType} failed: ${status.error.code}: ${status.error.message}`);
      return { ms, processingTime: status.processingTime, qualityScore: status.qualityScore, peak };
    }
    await sleep(5);
  }
}


// The input set of each kind of frames a blend type is made for (its `input` in src/blend/engine/registry.ts).
export const INPUT_SETS = { scene: 'scene', bracket: 'bracket', 'focus-bracket': 'focus', group: 'group' };

export async function run() {
  const rounds = seconds('BENCH_ROUNDS', 3, 1);
  const m = machine();
  await build();
  // Every type of the registry, each on the frames it is made for, in the built server's own list.
  const { BLEND_REGISTRY } = await import(pathToFileURL(path.join(ROOT, 'dist/blend/engine/registry.js')).href);
  const inputOf = Object.fromEntries(Object.entries(BLEND_REGISTRY).map(([type, { input }]) => [type, INPUT_SETS[input]]));
  const types = (process.env.BENCH_BLEND_TYPES || Object.keys(inputOf).join(',')).split(',');
  ensureAnchors();
  const { dir } = makeTempDir('montage-bench-blend-inputs-');
  log('  making inputs ...');
  const sets = await makeInputs(dir);
  const { server, base: imageBase } = await fileServer(dir);
  const urls = Object.fromEntries(Object.entries(sets).map(([k, files]) => [k, files.map((f) => `${imageBase}/${path.basename(f)}`)]));

  log('  anchors (ImageMagick, enfuse) ...');
  const anchorRuns = [];
  for (let r = 0; r < rounds; r++) anchorRuns.push(anchors(sets, dir));
  const anchor = Object.fromEntries(Object.keys(anchorRuns[0]).map((k) => [k, { tool: anchorRuns[0][k].tool, ms: median(anchorRuns.map((a) => a[k].ms)), peak: Math.max(...anchorRuns.map((a) => a[k].peak)) }]));
  for (const [k, a] of Object.entries(anchor)) log(`    ${k}: ${a.tool} ${s(a.ms)} s, peak ${(a.peak / 1e6).toFixed(0)} MB`);

  log('  Montage, one job at a time (default concurrency) ...');
  const montage = await startMontage(dir);
  const baseline = processMemory(montage.proc.child.pid);
  await runJob(montage, urls.scene, 'median', false); // warm-up: worker threads, OpenCV and the model load once per process
  await runJob(montage, urls.group, 'composite', false);
  const results = {};
  for (const type of types) {
    // A type's first job in a process also compiles its kernels and code paths in each pool
    // thread, once: reported on its own, and the rounds after it make the median.
    const first = await runJob(montage, urls[inputOf[type]], type, true);
    const runs = [];
    for (let r = 0; r < rounds; r++) runs.push(await runJob(montage, urls[inputOf[type]], type, true));
    results[type] = {
      ms: median(runs.map((x) => x.ms)),
      firstMs: first.ms,
      processingTime: median(runs.map((x) => x.processingTime)),
      qualityScore: runs[0].qualityScore,
      peak: Math.max(first.peak, ...runs.map((x) => x.peak)),
    };
    log(`    ${type}: ${s(results[type].ms)} s end to end (processing ${s(results[type].processingTime)} s; the type's first job ${s(first.ms)} s), peak RSS ${(results[type].peak / 1e6).toFixed(0)} MB, score ${results[type].qualityScore}`);
    if (process.env.BENCH_STAGES === '1') log(`      stages (ms): ${lastStages(montage.proc.output())}`);
  }
  const drifted = {};
  for (const type of DRIFTED_TYPES.filter((t) => types.includes(t))) {
    // The same drifted files aligned (the default) and with `align: false`, interleaved (the order
    // alternating per round) so that the machine's load hits both alike; the cost of alignment is
    // the median of the per-round differences. The first aligned job warms the alignment path.
    await runJob(montage, urls.drifted, type, false);
    const on = [];
    const off = [];
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [true, false] : [false, true];
      for (const align of order) (align ? on : off).push(await runJob(montage, urls.drifted, type, false, align));
      if (process.env.BENCH_STAGES === '1') log(`      stages (ms), ${type} drifted align ${order[1] ? 'on' : 'off'}: ${lastStages(montage.proc.output())}`);
    }
    drifted[type] = { on: median(on.map((x) => x.ms)), off: median(off.map((x) => x.ms)), cost: median(on.map((x, r) => x.ms - off[r].ms)) };
    log(`    ${type}, drifted frames: align on ${s(drifted[type].on)} s, align off ${s(drifted[type].off)} s, alignment costs ${s(drifted[type].cost)} s (median of ${rounds} rounds)`);
  }
  await montage.proc.stop();

  log('  responsiveness: GET /v1/account under load while two jobs run at once ...');
  const busy = await startMontage(dir, { MONTAGE_BLEND_CONCURRENCY: '2' });
  await runJob(busy, urls.scene, 'median', false);
  const headers = { authorization: `Bearer ${busy.apiKey}` };
  const idle = await autocannon(`${busy.base}/v1/account`, { connections: 4, duration: 5, headers, title: 'GET /v1/account idle' });
  let stop = false;
  let jobsDone = 0;
  const loop = async (type) => {
    while (!stop) {
      await runJob(busy, urls[inputOf[type]], type, false);
      jobsDone++;
    }
  };
  const loops = [loop('focus'), loop('exposure')];
  await sleep(500);
  const loaded = await autocannon(`${busy.base}/v1/account`, { connections: 4, duration: 15, headers, title: 'GET /v1/account during blends' });
  stop = true;
  await Promise.all(loops);
  await busy.proc.stop();
  server.close();
  log(`    GET p99 idle ${idle.p99} ms, during two blends ${loaded.p99} ms (${jobsDone} jobs done meanwhile)`);

  const rows = types.map((type) => {
    const r = results[type];
    const a = anchor[type];
    const target = TARGETS_S[type];
    return [
      type,
      s(r.ms),
      s(r.firstMs),
      s(r.processingTime),
      a ? `${a.tool} ${s(a.ms)}` : '–',
      a ? `${(a.ms / r.ms).toFixed(1)}×` : '–',
      `${(r.peak / 1e6).toFixed(0)}`,
      r.qualityScore.toFixed(3),
      target ? `≤ ${target.toFixed(1)} s: ${r.ms <= target * 1000 ? 'PASS' : 'FAIL'}` : '–',
    ];
  });
  const table = tables(['blend', 'end to end s', 'first job s', 'processing s', 'anchor s', 'anchor / Montage', 'peak RSS MB', 'qualityScore', 'target'], rows, ['left', 'right', 'right', 'right', 'left', 'right', 'right', 'right', 'left']);
  const driftedRows = Object.entries(drifted).map(([type, d]) => [
    type,
    s(d.on),
    s(d.off),
    s(d.cost),
    s(anchor[`drifted ${type}`].ms),
    s(results[type].ms),
    s(anchor[type].ms),
    `≤ ${ALIGN_COST_TARGET_S.toFixed(1)} s: ${d.cost <= ALIGN_COST_TARGET_S * 1000 ? 'PASS' : 'FAIL'}`,
  ]);
  const driftedTable = tables(
    ['blend', 'drifted, align on s', 'drifted, align off s', 'alignment costs s', 'drifted, ImageMagick s', 'lined up, Montage s', 'lined up, ImageMagick s', 'target'],
    driftedRows,
    ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
  );
  const peakAll = Math.max(...Object.values(results).map((r) => r.peak));
  const checks = [
    ...types.filter((t) => TARGETS_S[t]).map((t) => results[t].ms <= TARGETS_S[t] * 1000),
    ...Object.values(drifted).map((d) => d.cost <= ALIGN_COST_TARGET_S * 1000),
    peakAll <= PEAK_MEMORY_TARGET,
    loaded.p99 < GET_P99_TARGET_MS,
  ];
  const summary = [
    `Peak RSS of the server process (API + workers) over every job: ${(peakAll / 1e6).toFixed(0)} MB (target ≤ ${PEAK_MEMORY_TARGET / 1e9} GB: ${peakAll <= PEAK_MEMORY_TARGET ? 'PASS' : 'FAIL'}; at rest after start: ${(baseline.rss / 1e6).toFixed(0)} MB).`,
    `GET /v1/account (4 connections) while two jobs (focus and exposure, one after another in each of two slots) ran: p99 ${loaded.p99} ms, p50 ${loaded.p50} ms, ${Math.round(loaded.rps)} req/s; idle: p99 ${idle.p99} ms (target p99 < ${GET_P99_TARGET_MS} ms: ${loaded.p99 < GET_P99_TARGET_MS ? 'PASS' : 'FAIL'}).`,
  ];
  const markdown = [
    '## Blend: five 4000×3000 JPEGs end to end, against ImageMagick and enfuse',
    '',
    'What it measures: the time from `POST /v1/blend/start` to the status read that says `completed`, through a real',
    `\`node ${montageNodeFlags().join(' ')} bin/montage.js serve\` process (SQLite, workers in the process, default \`MONTAGE_BLEND_CONCURRENCY\` and`,
    'threads), with five 4000×3000 JPEG inputs (quality 92) served from a loopback HTTP server; beside ImageMagick 6',
    '(`convert FILES -evaluate-sequence median|mean|max`) and enfuse 4 (default weights for exposure;',
    '`--exposure-weight=0 --saturation-weight=0 --contrast-weight=1 --hard-mask` for focus) on the same files in the same run.',
    'Inputs are made from the fixture photos upscaled with texture and noise: a scene with passers-by (median, mean,',
    'lighten, darken, layer modes), a −2..+2 EV bracket (exposure), a focus bracket in five bands (focus), one person',
    'per frame (composite). Alignment is on (the default) except for lighten and darken.',
    '',
    `- Command: \`${commandLine(['BENCH_ROUNDS', 'BENCH_BLEND_TYPES'])}\``,
    `- Date: ${m.date}; built from commit ${m.commit}`,
    `- Machine: ${m.nproc} CPUs (\`nproc\`), ${m.cpu}, ${m.memory} RAM, ${m.os}`,
    `- Software: Node ${m.node}, sharp ${packageVersion('sharp')}, @techstark/opencv-js ${packageVersion('@techstark/opencv-js')}, ${spawnSync('/usr/bin/convert', ['-version'], { encoding: 'utf8' }).stdout.split('\n')[0].replace(/^Version: /, '').split(' https')[0]}, ${spawnSync('/usr/bin/enfuse', ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0]}`,
    `- Rounds: after two warm-up jobs (median, composite: threads, OpenCV and the model load once per process), each blend type's first job (its own column: it also compiles that type's kernels in each thread, once per process), then ${rounds} rounds of it (median: "end to end"); anchors ${rounds} rounds, median`,
    '',
    table.md,
    '',
    ...(driftedRows.length
      ? [
          '**Drifted frames.** The scene set again as a drifting tripod sees it: frames 2–5 moved by 3–15 px, two of them',
          'also turned (0.2°, −0.5°), so alignment must warp every frame but the first. Montage aligned (the default) and',
          'with `align: false` on the same files, interleaved in each round; "alignment costs" is the median of the',
          `per-round differences (target ≤ ${ALIGN_COST_TARGET_S} s). ImageMagick does not align. The lined-up figures are those of the table above.`,
          '',
          driftedTable.md,
          '',
        ]
      : []),
    ...summary,
    '',
    'Peak RSS is sampled every 10 ms from /proc during the job; it is the whole server process (HTTP, database,',
    'worker threads, libvips), not the blend alone. Anchors\' peak memory (from `/usr/bin/time`): ' +
      Object.entries(anchor)
        .map(([k, a]) => `${k} ${(a.peak / 1e6).toFixed(0)} MB`)
        .join(', ') +
      '.',
  ].join('\n');
  return { text: `${table.text}\n\n${driftedRows.length ? `${driftedTable.text}\n\n` : ''}${summary.join('\n')}`, markdown, pass: checks.every(Boolean), writeDoc: true };
}
