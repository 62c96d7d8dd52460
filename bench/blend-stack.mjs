// Streaming stacks benchmark (docs/benchmarks.md, "Stack"): long stacks of 4000×3000 JPEGs served
// from loopback, end to end through a real Montage server process (POST /v1/blend/start →
// completed), beside ImageMagick 6 (`/usr/bin/convert FILES -evaluate-sequence max|median`) on the
// same files in the same run:
// - star trails: BENCH_STACK_FRAMES (200) frames, `lighten`, align off; the same job on
//   BENCH_STACK_SHORT (20) frames gives the time per extra frame, set beside sharp's decode of one;
// - median: BENCH_STACK_MEDIAN_FRAMES (50) frames, align off (ImageMagick does not align either);
// - focus: BENCH_STACK_FOCUS_FRAMES (30) frames of BENCH_STACK_FOCUS_MP (12) megapixels, align off,
//   beside enfuse's focus stacking (`/usr/bin/enfuse --exposure-weight=0 --saturation-weight=0
//   --contrast-weight=1 --hard-mask`) on the same files, when it is installed.
// BENCH_STACK_PARTS (lighten,median,focus) picks which run: `BENCH_STACK_PARTS=focus
// BENCH_STACK_FOCUS_FRAMES=10 BENCH_STACK_FOCUS_MP=2` is a quick check of the focus row alone.
// Each Montage job runs in a fresh server process, whose peak resident set (VmHWM, every thread and
// libvips included) is read from /proc when the job is over; ImageMagick's is /usr/bin/time's
// maximum resident set. ImageMagick runs with its Debian resource policy (convert -list resource);
// where it cannot finish, the table says how far it got and why. See bench/README.md.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import { build, checkedJson, createAccountAndKey, freePort, lastStages, machine, makeTempDir, median, montageEnv, montageArgs, processMemory, ROOT, startProcess, tables, waitForHttp } from './lib.mjs';

export const name = 'stack';
export const description = 'Streaming stacks: 200 × 12 MP lighten, 50 × 12 MP median and 30 × 12 MP focus end to end, peak RSS, vs ImageMagick and enfuse';

const WIDTH = 4000;
const HEIGHT = 3000;
const LIGHTEN_PEAK_TARGET = 1.2e9;
const MEDIAN_PEAK_TARGET = 1.5e9;
const FOCUS_PEAK_TARGET = 1.5e9;
const ENFUSE = '/usr/bin/enfuse';
/** Longest an ImageMagick run may take before it counts as not finishing. */
const MAGICK_TIMEOUT_S = 300;
/** ImageMagick's raised memory limits: room for a 50-frame median's pixel cache (4.8 GB) in memory. */
const MAGICK_MEMORY = '6GiB';
const PHOTO = path.join(ROOT, 'test/fixtures/blend/handheld-mean/gt.png');

const log = (line) => process.stdout.write(`${line}\n`);
const s = (ms) => (ms / 1000).toFixed(1);
const mb = (bytes) => `${Math.round(bytes / 1e6)} MB`;

/**
 * `count` frames of one night scene: the fixture photo scaled up to 12 MP and darkened, fixed
 * noise, a few bright "stars" that move a little from frame to frame (so a maximum shows trails),
 * and each frame taken at a drift of a few pixels, JPEG q92.
 */
async function makeFrames(dir, count) {
  const margin = 64;
  const [w, h] = [WIDTH + margin, HEIGHT + margin];
  const { data } = await sharp(PHOTO).resize(w, h, { fit: 'fill' }).removeAlpha().linear(0.45, 0).raw().toBuffer({ resolveWithObject: true });
  let seed = 2026;
  const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) / 16777216;
  for (let i = 0; i < data.length; i++) data[i] = Math.max(0, Math.min(255, data[i] + Math.round((random() - 0.5) * 24)));
  const stars = Array.from({ length: 400 }, () => [random() * WIDTH, random() * HEIGHT * 0.6]);
  const files = [];
  for (let k = 0; k < count; k++) {
    const left = Math.round(margin / 2 + 8 * Math.sin(k / 9));
    const top = Math.round(margin / 2 + 6 * Math.cos(k / 7));
    const frame = Buffer.alloc(WIDTH * HEIGHT * 3);
    for (let y = 0; y < HEIGHT; y++) data.copy(frame, y * WIDTH * 3, ((y + top) * w + left) * 3, ((y + top) * w + left + WIDTH) * 3);
    for (const [x, y] of stars) {
      // each star turns a little about the pole at the top centre from frame to frame
      const angle = k * 0.0015;
      const [dx, dy] = [x - WIDTH / 2, y + 200];
      const px = Math.round(WIDTH / 2 + dx * Math.cos(angle) - dy * Math.sin(angle));
      const py = Math.round(-200 + dx * Math.sin(angle) + dy * Math.cos(angle));
      if (px < 1 || py < 1 || px >= WIDTH - 1 || py >= HEIGHT - 1) continue;
      for (const [ox, oy] of [[0, 0], [1, 0], [0, 1], [1, 1]]) frame.fill(250, ((py + oy) * WIDTH + px + ox) * 3, ((py + oy) * WIDTH + px + ox) * 3 + 3);
    }
    const file = path.join(dir, `${k}.jpg`);
    await sharp(frame, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } }).jpeg({ quality: 92 }).toFile(file);
    files.push(file);
    if ((k + 1) % 50 === 0) log(`    ${k + 1} frames made`);
  }
  return files;
}

/**
 * `count` frames of a focus bracket at `mp` megapixels (4:3): the fixture photo blurred (σ 6 px)
 * but for one band of rows per frame, sharp there, so each frame is the sharpest in its own band;
 * JPEG q92.
 */
async function makeFocusFrames(dir, count, mp) {
  const width = Math.round(Math.sqrt((mp * 1e6 * 4) / 3));
  const height = Math.round((width * 3) / 4);
  const sharpPhoto = await sharp(PHOTO).resize(width, height, { fit: 'fill' }).removeAlpha().raw().toBuffer();
  const blurred = await sharp(sharpPhoto, { raw: { width, height, channels: 3 } }).blur(6).raw().toBuffer();
  const files = [];
  for (let k = 0; k < count; k++) {
    const frame = Buffer.from(blurred);
    const [y0, y1] = [Math.floor((k * height) / count), Math.floor(((k + 1) * height) / count)];
    sharpPhoto.copy(frame, y0 * width * 3, y0 * width * 3, y1 * width * 3);
    const file = path.join(dir, `focus-${k}.jpg`);
    await sharp(frame, { raw: { width, height, channels: 3 } }).jpeg({ quality: 92 }).toFile(file);
    files.push(file);
  }
  return { files, width, height };
}

/** enfuse's focus stacking over the files: time and peak resident set, or why it did not run. */
function enfuse(files, out) {
  if (!fs.existsSync(ENFUSE)) return { ok: false, ms: 0, peak: 0, note: `${ENFUSE} is not installed` };
  const started = performance.now();
  const args = ['-f', '%M', 'timeout', String(MAGICK_TIMEOUT_S), ENFUSE, '--exposure-weight=0', '--saturation-weight=0', '--contrast-weight=1', '--hard-mask', '-o', out, ...files];
  const result = spawnSync('/usr/bin/time', args, { encoding: 'utf8', maxBuffer: 1 << 24 });
  const ms = performance.now() - started;
  const lines = result.stderr.trim().split('\n');
  const peak = Number(lines.pop()) * 1024;
  if (result.status === 0) return { ok: true, ms, peak, note: '' };
  return { ok: false, ms, peak, note: result.status === 124 ? `not done after ${MAGICK_TIMEOUT_S} s` : (lines.at(-1) ?? `exit ${result.status}`).slice(0, 160) };
}

function fileServer(dir) {
  const server = http.createServer((req, res) => {
    const file = path.join(dir, path.basename(req.url ?? '/'));
    if (!fs.existsSync(file)) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': fs.statSync(file).size });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, base: `http://127.0.0.1:${server.address().port}` })));
}

/** A fresh Montage server: its VmHWM then covers its own jobs alone. */
async function startMontage() {
  const port = await freePort();
  const storage = { montageDir: makeTempDir('montage-bench-stack-').dir };
  const env = montageEnv('sqlite', storage, port, { MONTAGE_ALLOW_PRIVATE_NETWORK: '1', MONTAGE_BLEND_JOB_TIMEOUT: '30m', MONTAGE_LOG_LEVEL: 'info' });
  const apiKey = await createAccountAndKey(env);
  const proc = startProcess('montage serve', process.execPath, montageArgs('serve'), { env });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(proc, `${base}/healthz`);
  return { proc, base, apiKey };
}

async function runJob(montage, images, blendType) {
  const headers = { authorization: `Bearer ${montage.apiKey}`, 'content-type': 'application/json' };
  const started = performance.now();
  const body = { projectId: 'bench', images, options: { blendType, align: false } };
  const job = await checkedJson(await fetch(`${montage.base}/v1/blend/start`, { method: 'POST', headers, body: JSON.stringify(body) }), 'POST /v1/blend/start', 202);
  for (;;) {
    const status = await checkedJson(await fetch(`${montage.base}/v1/blend/status/${job.jobId}`, { headers }), 'GET /v1/blend/status');
    if (status.status === 'completed' || status.status === 'failed') {
      if (status.status === 'failed') throw new Error(`${blendType} failed: ${status.error.code}: ${status.error.message}`);
      return { ms: performance.now() - started, processingTime: status.processingTime };
    }
    await sleep(50);
  }
}


/** One Montage job in a fresh server after a small warm-up job of the same type: time, and the server's peak resident set. */
async function montageRun(urls, blendType) {
  const montage = await startMontage();
  try {
    await runJob(montage, urls.slice(0, 3), blendType);
    const run = await runJob(montage, urls, blendType);
    return { ...run, peak: processMemory(montage.proc.child.pid).hwm, stages: lastStages(montage.proc.output()) };
  } finally {
    await montage.proc.stop();
  }
}

/** ImageMagick over the files: time and peak resident set, or how it failed. */
function magick(files, op, out, configurePath = null) {
  const started = performance.now();
  const env = configurePath ? { ...process.env, MAGICK_CONFIGURE_PATH: configurePath } : process.env;
  const result = spawnSync('/usr/bin/time', ['-f', '%M', 'timeout', String(MAGICK_TIMEOUT_S), '/usr/bin/convert', ...files, '-evaluate-sequence', op, out], { encoding: 'utf8', maxBuffer: 1 << 24, env });
  const ms = performance.now() - started;
  const lines = result.stderr.trim().split('\n');
  const peak = Number(lines.pop()) * 1024;
  if (result.status === 0) return { ok: true, ms, peak, note: '' };
  const reason = result.status === 124 ? `not done after ${MAGICK_TIMEOUT_S} s` : (lines.find((l) => /convert/.test(l)) ?? lines.at(-1) ?? `exit ${result.status}`).replace(/^convert(-im6\.q16)?: /, '').slice(0, 160);
  return { ok: false, ms, peak, note: reason };
}

/** An ImageMagick policy whose resource limits let a long stack's pixel cache exist. */
function raisedPolicy() {
  const limits = { memory: MAGICK_MEMORY, map: MAGICK_MEMORY, area: MAGICK_MEMORY, disk: '64GiB' };
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<policymap>',
    ...Object.entries(limits).map(([name, value]) => `  <policy domain="resource" name="${name}" value="${value}"/>`),
    '</policymap>',
    '',
  ].join('\n');
}

/** Median time of sharp decoding one of the frames to raw RGB, as the engine does. */
async function decodeMs(file, rounds = 5) {
  const times = [];
  for (let r = 0; r < rounds; r++) {
    const started = performance.now();
    await sharp(file).rotate().toColourspace('srgb').removeAlpha().raw().toBuffer();
    times.push(performance.now() - started);
  }
  return median(times);
}

/** A frame count from the environment, at least `min`. */
function count(name, fallback, min) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be a whole number of frames (>= ${min}), got "${raw}"`);
  return value;
}

/** Which parts run (BENCH_STACK_PARTS). */
function parts() {
  const all = ['lighten', 'median', 'focus'];
  const chosen = (process.env.BENCH_STACK_PARTS || all.join(',')).split(',').map((p) => p.trim());
  const unknown = chosen.filter((p) => !all.includes(p));
  if (unknown.length) throw new Error(`BENCH_STACK_PARTS takes ${all.join(', ')}; got ${unknown.join(', ')}`);
  return new Set(chosen);
}

export async function run() {
  const short = count('BENCH_STACK_SHORT', 20, 3);
  const frames = count('BENCH_STACK_FRAMES', 200, short + 1);
  const medianFrames = count('BENCH_STACK_MEDIAN_FRAMES', 50, 3);
  const focusFrames = count('BENCH_STACK_FOCUS_FRAMES', 30, 3);
  const focusMp = Number(process.env.BENCH_STACK_FOCUS_MP || 12);
  if (!(focusMp > 0 && focusMp <= 50)) throw new Error(`BENCH_STACK_FOCUS_MP must be megapixels in (0, 50], got "${process.env.BENCH_STACK_FOCUS_MP}"`);
  const run = parts();
  const m = machine();
  await build();
  const { dir } = makeTempDir('montage-bench-stack-inputs-');
  const rows = [];
  const checks = [];
  const notes = [];
  const verdict = (ok) => (ok ? 'pass' : 'FAIL');
  const anchor = (a) => (a.ok ? `${s(a.ms)} s` : `did not finish (${a.note}) after ${s(a.ms)} s`);
  const { server, base } = await fileServer(dir);
  const urlOf = (f) => `${base}/${path.basename(f)}`;

  if (run.has('lighten') || run.has('median')) {
    log(`  making ${frames} frames of ${WIDTH}×${HEIGHT} ...`);
    const files = await makeFrames(dir, Math.max(run.has('lighten') ? frames : 0, run.has('median') ? medianFrames : 0));
    const urls = files.map(urlOf);
    const decode = await decodeMs(files[0]);
    if (run.has('lighten')) {
      const bytes = files.slice(0, frames).reduce((sum, f) => sum + fs.statSync(f).size, 0);
      log(`    ${mb(bytes)} of JPEG; sharp decodes one in ${decode.toFixed(0)} ms`);
      log(`  Montage lighten, ${short} and ${frames} frames ...`);
      const lightShort = await montageRun(urls.slice(0, short), 'lighten');
      const light = await montageRun(urls.slice(0, frames), 'lighten');
      const perFrame = (light.processingTime - lightShort.processingTime) / (frames - short);
      log(`    ${short}: ${s(lightShort.ms)} s, peak ${mb(lightShort.peak)}; ${frames}: ${s(light.ms)} s, peak ${mb(light.peak)}; ${perFrame.toFixed(0)} ms per extra frame`);
      log('  ImageMagick max ...');
      const magickLight = magick(files.slice(0, frames), 'max', path.join(dir, 'magick-max.jpg'));
      log(`    max of ${frames}: ${magickLight.ok ? `${s(magickLight.ms)} s` : `failed after ${s(magickLight.ms)} s: ${magickLight.note}`}, peak ${mb(magickLight.peak)}`);
      const magickLightRaised = magick(files.slice(0, frames), 'max', path.join(dir, 'magick-max.jpg'), raisedPolicyDir(dir));
      log(`    max of ${frames}, limits raised: ${magickLightRaised.ok ? `${s(magickLightRaised.ms)} s` : `failed after ${s(magickLightRaised.ms)} s: ${magickLightRaised.note}`}, peak ${mb(magickLightRaised.peak)}`);
      checks.push(light.peak <= LIGHTEN_PEAK_TARGET);
      rows.push([`lighten, ${short} frames`, `${s(lightShort.ms)} s`, mb(lightShort.peak), '', '', '', '', '']);
      rows.push([`lighten, ${frames} frames (star trails)`, `${s(light.ms)} s`, mb(light.peak), `≤ ${mb(LIGHTEN_PEAK_TARGET)}: ${verdict(checks.at(-1))}`, anchor(magickLight), mb(magickLight.peak), anchor(magickLightRaised), mb(magickLightRaised.peak)]);
      notes.push(`Time per extra frame (lighten, ${short} → ${frames} frames, processing time): ${perFrame.toFixed(0)} ms; sharp decodes one frame in ${decode.toFixed(0)} ms (median of 5).`);
      notes.push(`Stages (ms, the server's log): lighten ${frames}: ${light.stages}.`);
    }
    if (run.has('median')) {
      log(`  Montage median, ${medianFrames} frames ...`);
      const med = await montageRun(urls.slice(0, medianFrames), 'median');
      log(`    ${s(med.ms)} s, peak ${mb(med.peak)}; stages ${med.stages}`);
      log('  ImageMagick median ...');
      const magickMedian = magick(files.slice(0, medianFrames), 'median', path.join(dir, 'magick-median.jpg'));
      log(`    median of ${medianFrames}: ${magickMedian.ok ? `${s(magickMedian.ms)} s` : `failed after ${s(magickMedian.ms)} s: ${magickMedian.note}`}, peak ${mb(magickMedian.peak)}`);
      const magickMedianRaised = magick(files.slice(0, medianFrames), 'median', path.join(dir, 'magick-median.jpg'), raisedPolicyDir(dir));
      log(`    median of ${medianFrames}, limits raised: ${magickMedianRaised.ok ? `${s(magickMedianRaised.ms)} s` : `failed after ${s(magickMedianRaised.ms)} s: ${magickMedianRaised.note}`}, peak ${mb(magickMedianRaised.peak)}`);
      checks.push(med.peak <= MEDIAN_PEAK_TARGET);
      rows.push([`median, ${medianFrames} frames`, `${s(med.ms)} s`, mb(med.peak), `≤ ${mb(MEDIAN_PEAK_TARGET)}: ${verdict(checks.at(-1))}`, anchor(magickMedian), mb(magickMedian.peak), anchor(magickMedianRaised), mb(magickMedianRaised.peak)]);
      notes.push(`Stages (ms, the server's log): median ${medianFrames}: ${med.stages}.`);
    }
  }

  if (run.has('focus')) {
    log(`  making ${focusFrames} focus frames of ${focusMp} MP ...`);
    const focus = await makeFocusFrames(dir, focusFrames, focusMp);
    log(`  Montage focus, ${focusFrames} × ${focus.width}×${focus.height} ...`);
    const stack = await montageRun(focus.files.map(urlOf), 'focus');
    log(`    ${s(stack.ms)} s, peak ${mb(stack.peak)}; stages ${stack.stages}`);
    log('  enfuse ...');
    const fused = enfuse(focus.files, path.join(dir, 'enfuse-focus.tif'));
    log(`    ${fused.ok ? `${s(fused.ms)} s` : `failed after ${s(fused.ms)} s: ${fused.note}`}, peak ${mb(fused.peak)}`);
    checks.push(stack.peak <= FOCUS_PEAK_TARGET);
    rows.push([`focus, ${focusFrames} × ${focusMp} MP`, `${s(stack.ms)} s`, mb(stack.peak), `≤ ${mb(FOCUS_PEAK_TARGET)}: ${verdict(checks.at(-1))}`, fused.ok ? `enfuse: ${s(fused.ms)} s` : `enfuse: ${fused.note}`, fused.ok ? mb(fused.peak) : '', '', '']);
    notes.push(`Stages (ms, the server's log): focus ${focusFrames}: ${stack.stages}.`);
  }
  server.close();

  const table = tables(['job', 'Montage', 'Montage peak RSS', 'target', 'ImageMagick 6 (focus: enfuse)', 'its peak RSS', 'ImageMagick 6, limits raised', 'its peak RSS'], rows);
  const markdown = [
    '## Blend stacks: 200 frames folded one at a time, 50 frames of median by bands, 30 frames of focus in passes, against ImageMagick and enfuse',
    '',
    `${frames} (and ${short}) × ${WIDTH}×${HEIGHT} JPEG q92 made from the fixture photo with noise, moving stars and a drift of a few pixels, served from loopback; align off.`,
    `Focus: ${focusFrames} frames of ${focusMp} MP, the fixture photo blurred (σ 6 px) but for one band of rows per frame, JPEG q92; align off.`,
    'Montage: end to end (POST to `completed`), each job in a fresh server process after a 3-frame warm-up of its type; peak RSS is the server\'s VmHWM (every thread, libvips included).',
    `ImageMagick: \`/usr/bin/convert FILES -evaluate-sequence max|median\` with its Debian resource policy (memory 256 MiB, disk 1 GiB), then with a policy of memory, map and area ${MAGICK_MEMORY} and disk 64 GiB (MAGICK_CONFIGURE_PATH); peak from /usr/bin/time, stopped after ${MAGICK_TIMEOUT_S} s.`,
    `enfuse: \`${ENFUSE} --exposure-weight=0 --saturation-weight=0 --contrast-weight=1 --hard-mask -o out.tif FILES\` on the same focus frames; peak from /usr/bin/time.`,
    '',
    table.md,
    '',
    ...notes,
    '',
    `Machine: ${m.nproc} × ${m.cpu}, ${m.memory}; ${m.os}, Node ${m.node}; commit ${m.commit}, ${m.date}. Command: \`npm run bench -- stack\`.`,
  ].join('\n');
  return { text: `${table.text}\n\n${notes.join('\n')}`, markdown, pass: checks.every(Boolean), writeDoc: run.size === 3 };
}

/** A directory holding an ImageMagick policy whose limits let a long stack's pixel cache exist (MAGICK_CONFIGURE_PATH). */
function raisedPolicyDir(dir) {
  // `-limit` cannot raise the system policy's limits; a policy file of its own can
  const raised = path.join(dir, 'magick-policy');
  fs.mkdirSync(raised, { recursive: true });
  fs.writeFileSync(path.join(raised, 'policy.xml'), raisedPolicy());
  return raised;
}
