// Upload benchmark (docs/benchmarks.md, "Blend uploads"): twenty 4000×3000 JPEGs uploaded to a real
// Montage server process (POST /v1/blend/uploads, one image per request, one after another as
// `montage blend` sends them), against a plain file copy of the same files on the same disk (the
// floor) and the same requests to a bare Node HTTP server that pipes each body into a file (the
// HTTP floor, bench/upload-floor-server.mjs), interleaved, with the CPU time each side spends per
// MB; then the same median job of the twenty frames by upload and by URL (a loopback file server),
// interleaved. See bench/README.md.
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import {
  build,
  checkedJson,
  commandLine,
  createAccountAndKey,
  freePort,
  machine,
  makeTempDir,
  median,
  montageArgs,
  montageEnv,
  montageNodeFlags,
  processCpuSeconds,
  ROOT,
  seconds,
  startProcess,
  tables,
  waitForHttp,
} from './lib.mjs';

export const name = 'upload';
export const description = 'Blend uploads: 20 × 12 MP JPEGs uploaded vs a file copy on the same disk; the job by upload vs by URL';

const WIDTH = 4000;
const HEIGHT = 3000;
const FRAMES = 20;
/** Upload throughput against the floor, and the job by upload against the job by URL. */
const THROUGHPUT_TARGET = 0.5;
const JOB_TARGET = 1.1;

const log = (line) => process.stdout.write(`${line}\n`);
const s = (ms) => (ms / 1000).toFixed(2);
const mbps = (bytes, ms) => (bytes / 1e6 / (ms / 1000)).toFixed(0);
/** CPU milliseconds per MB, as printed. */
const perMb = (ms, bytes) => (ms / (bytes / 1e6)).toFixed(2);
/** This process's CPU time so far (user + system), in ms. */
const ownCpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** Twenty 12 MP frames of one scene, each with noise of its own (a seeded LCG), as JPEG q92. */
async function makeFrames(dir) {
  const base = await sharp(path.join(ROOT, 'test/fixtures/blend/median-crowd/gt.png')).removeAlpha().resize(WIDTH, HEIGHT, { fit: 'cover' }).raw().toBuffer();
  const files = [];
  for (let f = 0; f < FRAMES; f++) {
    let seed = 1000 + f;
    const frame = Buffer.allocUnsafe(base.length);
    for (let i = 0; i < base.length; i++) {
      seed = (Math.imul(seed, 1664525) + 1013904223) | 0;
      frame[i] = Math.max(0, Math.min(255, base[i] + ((seed >>> 24) % 13) - 6));
    }
    const file = path.join(dir, `frame-${String(f + 1).padStart(2, '0')}.jpg`);
    await sharp(frame, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } }).jpeg({ quality: 92 }).toFile(file);
    files.push(file);
  }
  return files;
}

/** The floor: each file copied through a read and a write stream into `target` (what the store does with an upload's bytes). */
async function copyAll(files, target) {
  fs.mkdirSync(target, { recursive: true });
  for (const file of files) await pipeline(fs.createReadStream(file), fs.createWriteStream(path.join(target, path.basename(file))));
}

/**
 * Runs `fn` and measures it: wall time, the CPU time of the process at `serverPid` (from /proc,
 * 10 ms ticks) and of this one (the client, or the copy), each in ms.
 */
async function measured(serverPid, fn) {
  const server = serverPid ? processCpuSeconds(serverPid) : 0;
  const client = ownCpuMs();
  const started = performance.now();
  const value = await fn();
  const ms = performance.now() - started;
  return { value, ms, clientCpuMs: ownCpuMs() - client, serverCpuMs: serverPid ? (processCpuSeconds(serverPid) - server) * 1000 : null };
}

// One keep-alive agent for every upload: the connection is reused as fetch would reuse it.
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/**
 * One file as multipart/form-data, streamed from disk through node:http (fetch's web streams cost
 * the client about twice the CPU per MB, and client and server share the machine's cores), to
 * `url`; answers the JSON of the 201.
 */
async function uploadFile(url, apiKey, file) {
  const boundary = `bench-${Math.random().toString(36).slice(2)}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${path.basename(file)}"\r\nContent-Type: image/jpeg\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const size = fs.statSync(file).size;
  const target = new URL(url);
  const res = await new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        hostname: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + size + tail.length) },
      },
      resolve,
    );
    req.on('error', reject);
    req.write(head);
    const body = fs.createReadStream(file, { highWaterMark: 1024 * 1024 });
    body.on('error', reject);
    body.on('end', () => req.end(tail));
    body.pipe(req, { end: false });
  });
  const chunks = [];
  for await (const chunk of res) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  if (res.statusCode !== 201) throw new Error(`POST ${target.pathname}: HTTP ${res.statusCode} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** The twenty files uploaded one after another to `url`; answers their ids (Montage's) or nothing (the floor's). */
async function uploadAll(url, apiKey, files) {
  const ids = [];
  for (const file of files) ids.push((await uploadFile(url, apiKey, file)).id);
  return ids;
}

async function runJob(montage, images) {
  const headers = { authorization: `Bearer ${montage.apiKey}`, 'content-type': 'application/json' };
  const started = performance.now();
  const job = await checkedJson(
    await fetch(`${montage.base}/v1/blend/start`, { method: 'POST', headers, body: JSON.stringify({ projectId: 'bench', images, options: { blendType: 'median' } }) }),
    'POST /v1/blend/start',
    202,
  );
  for (;;) {
    const status = await checkedJson(await fetch(`${montage.base}/v1/blend/status/${job.jobId}`, { headers }), 'GET /v1/blend/status');
    if (status.status === 'failed') throw new Error(`the job failed: ${status.error.code}: ${status.error.message}`);
    if (status.status === 'completed') return { ms: performance.now() - started, processingTime: status.processingTime };
    await sleep(5);
  }
}

function fileServer(files) {
  const byName = new Map(files.map((f) => [path.basename(f), f]));
  const server = http.createServer((req, res) => {
    const file = byName.get(path.basename(req.url ?? '/'));
    if (!file) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': fs.statSync(file).size });
    fs.createReadStream(file).pipe(res);
  });
  server.listen(0, '127.0.0.1');
  return once(server, 'listening').then(() => ({ server, base: `http://127.0.0.1:${server.address().port}` }));
}

export async function run() {
  const rounds = seconds('BENCH_ROUNDS', 3, 1);
  const m = machine();
  const loadBefore = os.loadavg()[0];
  await build();
  // Inputs, the server's data and the copies of the floor all in one temp directory: one disk.
  const { dir } = makeTempDir('montage-bench-upload-');
  log('  making 20 frames of 4000×3000 ...');
  fs.mkdirSync(path.join(dir, 'inputs'));
  const files = await makeFrames(path.join(dir, 'inputs'));
  const totalBytes = files.reduce((sum, f) => sum + fs.statSync(f).size, 0);
  log(`    ${(totalBytes / 1e6).toFixed(1)} MB in all`);

  const port = await freePort();
  const env = montageEnv('sqlite', { montageDir: path.join(dir, 'montage') }, port, {
    MONTAGE_ALLOW_PRIVATE_NETWORK: '1',
    MONTAGE_BLEND_MAX_IMAGES: String(FRAMES),
    MONTAGE_BLEND_MAX_JOB_PIXELS: String(FRAMES * WIDTH * HEIGHT),
    MONTAGE_BLEND_JOB_TIMEOUT: '600s',
    MONTAGE_BLEND_CONCURRENCY: '1',
  });
  const apiKey = await createAccountAndKey(env);
  const proc = startProcess('montage serve', process.execPath, montageArgs('serve'), { env });
  const montage = { proc, base: `http://127.0.0.1:${port}`, apiKey };
  await waitForHttp(proc, `${montage.base}/healthz`);
  const floorPort = await freePort();
  const floor = startProcess('upload floor', process.execPath, [...montageNodeFlags(), path.join(ROOT, 'bench/upload-floor-server.mjs')], {
    env: { ...process.env, PORT: String(floorPort), FLOOR_DIR: path.join(dir, 'montage', 'floor') },
  });
  await waitForHttp(floor, `http://127.0.0.1:${floorPort}/healthz`);
  const { server, base: imageBase } = await fileServer(files);
  const urls = files.map((f) => `${imageBase}/${path.basename(f)}`);

  log('  file copies, uploads to the HTTP floor and to Montage, interleaved (the order reversed every other round) ...');
  const montageUrl = `${montage.base}/v1/blend/uploads`;
  const floorUrl = `http://127.0.0.1:${floorPort}/upload`;
  // Warm-up: the first request of each process.
  await uploadFile(montageUrl, apiKey, files[0]);
  await uploadFile(floorUrl, apiKey, files[0]);
  const ways = {
    copy: { runs: [], run: (r) => measured(null, () => copyAll(files, path.join(dir, 'montage', `copy-${r}`))) },
    floor: { runs: [], run: () => measured(floor.child.pid, () => uploadAll(floorUrl, apiKey, files)) },
    montage: { runs: [], run: () => measured(proc.child.pid, () => uploadAll(montageUrl, apiKey, files)) },
  };
  let ids = null;
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ['copy', 'floor', 'montage'] : ['montage', 'floor', 'copy'];
    const line = [];
    for (const way of order) {
      const result = await ways[way].run(r);
      ways[way].runs.push(result);
      if (way === 'montage') ids = result.value;
      const cpu = result.serverCpuMs === null ? `${perMb(result.clientCpuMs, totalBytes)} ms CPU/MB` : `server ${perMb(result.serverCpuMs, totalBytes)} ms CPU/MB`;
      line.push(`${way} ${s(result.ms)} s (${mbps(totalBytes, result.ms)} MB/s, ${cpu})`);
    }
    log(`    round ${r + 1}: ${line.join(', ')}`);
  }
  await floor.stop();
  const med = (way, field) => median(ways[way].runs.map((x) => x[field]));
  const copyMs = med('copy', 'ms');
  const uploadMs = med('montage', 'ms');

  log('  the median job of the 20 frames, by upload and by URL, interleaved ...');
  await runJob(montage, urls.slice(0, 3)); // warm-up: worker threads start with the first job
  const byUpload = [];
  const byUrl = [];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ['upload', 'url'] : ['url', 'upload'];
    for (const kind of order) {
      const result = await runJob(montage, kind === 'upload' ? ids : urls);
      (kind === 'upload' ? byUpload : byUrl).push(result);
      log(`    round ${r + 1}, by ${kind}: ${s(result.ms)} s end to end (processing ${s(result.processingTime)} s)`);
    }
  }
  server.close();
  await proc.stop();

  const loadAfter = os.loadavg()[0];
  const uploadJobMs = median(byUpload.map((x) => x.ms));
  // What differs between the two: the time before processing starts (the images read, from the store or over HTTP).
  const before = (runs) => s(median(runs.map((x) => x.ms - x.processingTime)));
  const urlJobMs = median(byUrl.map((x) => x.ms));
  const ratio = uploadMs / copyMs;
  const jobRatio = uploadJobMs / urlJobMs;
  const cpuCells = (way) => [
    ways[way].runs[0].serverCpuMs === null ? '–' : perMb(med(way, 'serverCpuMs'), totalBytes),
    perMb(med(way, 'clientCpuMs'), totalBytes),
  ];
  const rows = [
    ['plain file copy (the floor)', s(copyMs), mbps(totalBytes, copyMs), '1.00', ...cpuCells('copy'), '–'],
    ['20 uploads to a bare Node HTTP server (the HTTP floor)', s(med('floor', 'ms')), mbps(totalBytes, med('floor', 'ms')), (copyMs / med('floor', 'ms')).toFixed(2), ...cpuCells('floor'), '–'],
    [
      '20 uploads to Montage, one after another',
      s(uploadMs),
      mbps(totalBytes, uploadMs),
      (copyMs / uploadMs).toFixed(2),
      ...cpuCells('montage'),
      `≥ ${THROUGHPUT_TARGET} of the floor: ${copyMs / uploadMs >= THROUGHPUT_TARGET ? 'PASS' : 'FAIL'}`,
    ],
  ];
  const serverCpuRatio = med('montage', 'serverCpuMs') / med('floor', 'serverCpuMs');
  const jobRows = [
    ['by URL (loopback file server)', s(urlJobMs), before(byUrl), s(median(byUrl.map((x) => x.processingTime))), '1.00', '–'],
    ['by upload', s(uploadJobMs), before(byUpload), s(median(byUpload.map((x) => x.processingTime))), jobRatio.toFixed(2), `≤ ${JOB_TARGET.toFixed(2)}: ${jobRatio <= JOB_TARGET ? 'PASS' : 'FAIL'}`],
  ];
  const t1 = tables(['what', 'seconds', 'MB/s', 'share of the floor', 'server CPU ms/MB', 'client (or copy) CPU ms/MB', 'target'], rows, [
    'left',
    'right',
    'right',
    'right',
    'right',
    'right',
    'left',
  ]);
  const t2 = tables(['the job, 20 × 12 MP median', 'end to end s', 'before processing s', 'processing s', 'against by URL', 'target'], jobRows, ['left', 'right', 'right', 'right', 'right', 'left']);
  const markdown = [
    '## Blend uploads: twenty 12 MP JPEGs uploaded, and the job by upload against by URL',
    '',
    `What it measures: twenty 4000×3000 JPEG frames (q92, ${(totalBytes / 1e6).toFixed(1)} MB in all) uploaded to a`,
    `\`node ${montageNodeFlags().join(' ')} bin/montage.js serve\` process (SQLite, workers in the process), one`,
    '`POST /v1/blend/uploads` after another as `montage blend` sends them, each streamed from disk; against the floor, the',
    'same files copied by a read and a write stream into a directory on the same disk as the server\'s object store; and',
    'the HTTP floor, the same requests to a bare Node HTTP server (`bench/upload-floor-server.mjs`) that pipes each body into',
    'a file on that disk and answers 201: the loopback transfer and the write, with no parsing, checks or database.',
    'The three interleaved, the order reversed every other round. CPU per MB: the user + system time of the server',
    'process (from `/proc`, 10 ms ticks) and of the benchmark\'s own process (the client that streams the files, or the',
    'copy) over a round, divided by the MB sent; steadier than MB/s when something else shares the machine.',
    'Then one median job of the twenty frames (alignment on, `MONTAGE_BLEND_MAX_IMAGES=20`,',
    '`MONTAGE_BLEND_MAX_JOB_PIXELS=240000000`), from `POST /v1/blend/start` to the status read that says `completed`,',
    'naming the uploads, and naming the same files by URL on a loopback file server; interleaved, the order alternating per round.',
    '',
    `- Command: \`${commandLine(['BENCH_ROUNDS'])}\``,
    `- Date: ${m.date}; built from commit ${m.commit}`,
    `- Machine: ${m.nproc} CPUs (\`nproc\`), ${m.cpu}, ${m.memory} RAM, ${m.os}`,
    `- Rounds: ${rounds}, median; the machine's load average (1 min) was ${loadBefore.toFixed(1)} at the start and ${loadAfter.toFixed(1)} at the end`,
    '- "before processing": end to end less the job\'s `processingTime`, i.e. the images read (from the store, or over HTTP) and the job admitted: the part where the two differ',
    '',
    t1.md,
    '',
    `Montage's server CPU per MB against the HTTP floor's: ${serverCpuRatio.toFixed(2)}×.`,
    '',
    t2.md,
  ].join('\n');
  const pass = copyMs / uploadMs >= THROUGHPUT_TARGET && jobRatio <= JOB_TARGET;
  return {
    text: `${t1.text}\n\n${t2.text}\n\nupload time / copy time: ${ratio.toFixed(2)}; Montage's server CPU per MB / the HTTP floor's: ${serverCpuRatio.toFixed(2)}`,
    markdown,
    pass,
    writeDoc: true,
  };
}
