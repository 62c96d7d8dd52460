// What deghosting costs a blend job, in-process: the blend benchmark's lined-up scene (bench/blend.mjs
// makeInputs: five 4000×3000 JPEGs of a static scene with two passers-by in each) through the engine
// of src/blend/pipeline.ts with `deghost` on and off, interleaved (the order alternating per round),
// after one warm-up job of each. The process's CPU time (every thread: pool, libvips) and wall time
// per job, min and median, and the per-round differences; on a busy machine the CPU figures are the
// steadier ones. `--root DIR` runs the engine of another checkout (DIR/src), to compare two versions
// with the same script on the same inputs; `--base DIR` runs a second checkout's engine in the same
// process, its jobs interleaved with the first's (each round: every engine, deghost on and off), and
// adds the per-round differences between the two (an A/B that the machine's load wanders through
// alike). `--align` runs the jobs with alignment on, as a job runs by default (the blend benchmark's
// lined-up rows). `--streamed`: a type that can stream (src/blend/memory.ts streamOf) reads its
// images from a spool and streams as the server runs a long stack, even on these five frames (a
// server holds a stack of up to ten); without it every job holds its frames. Then deghosting's grid and agreement test alone
// (src/blend/engine/deghost/), one thread: CPU per frame of their WebAssembly kernels and of their
// JavaScript references, alternating, on sharp's 1000 px thumbnails of the frames and their grids
// (500 × 375).
// Not part of `npm run bench` (bench/README.md).
//
//   node --import tsx bench/blend-deghost-cost.mjs [--types mean,exposure] [--rounds 6] [--inputs DIR] [--root DIR] [--base DIR] [--align] [--streamed]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { inputFrames } from './blend.mjs';
import { option as arg, roundsOption } from './lib.mjs';

const types = arg('types', 'mean').split(',');
const rounds = roundsOption(6);
const root = path.resolve(arg('root', path.join(import.meta.dirname, '..')));
const roots = [root, ...(arg('base') ? [path.resolve(arg('base'))] : [])];
for (const r of roots) if (!fs.existsSync(path.join(r, 'src/blend/pipeline.ts'))) throw new Error(`${r} holds no src/blend/pipeline.ts`);
const align = process.argv.includes('--align');
const streamed = process.argv.includes('--streamed');
const { dir, frames, remove: removeInputs } = await inputFrames(arg('inputs'), 'scene');

const engines = [];
for (const r of roots) {
  const { BlendEngine } = await import(path.join(r, 'src/blend/pipeline.ts'));
  const { loadConfig } = await import(path.join(r, 'src/config.ts'));
  const { addressPolicy } = await import(path.join(r, 'src/net/safe-http.ts'));
  engines.push(new BlendEngine(loadConfig({}).blend, addressPolicy(true), 'http://montage.invalid'));
}
const bytes = frames.map((f) => fs.readFileSync(path.join(dir, f)));
const sizes = await Promise.all(bytes.map((b) => sharp(b).metadata()));
const pixels = sizes.reduce((sum, { width, height }) => sum + width * height, 0);
const { streamOf } = await import(path.join(root, 'src/blend/memory.ts'));
const { Spool } = await import(path.join(root, 'src/blend/spool.ts'));
// with --streamed, a streaming type's images come from a spool, as the server fetches them (pipeline.ts fetch)
const spool = streamed ? await Spool.create() : null;
const spooled = spool ? await Promise.all(bytes.map((b, i) => spool.write(`image-${i}`, b))) : null;
const fetchedFor = (type) =>
  spool && streamOf(type, false) !== null
    ? { sources: spooled, pixels: Math.max(...sizes.map(({ width, height }) => width * height)), spool, discard: async () => {} }
    : { sources: bytes, pixels, spool: null, discard: async () => {} };
const spec = (blendType, deghost) => ({ images: frames, blendType, align, preserveBackground: false, deghost, outputFormat: 'jpeg' });

async function job(engine, type, deghost) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await engine.run(spec(type, deghost), fetchedFor(type));
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - started, cpu: (used.user + used.system) / 1000, stages: result.stages };
}

const sorted = (a) => [...a].sort((x, y) => x - y);
const summary = (a, digits = 0) => `min ${sorted(a)[0].toFixed(digits)}, median ${sorted(a)[a.length >> 1].toFixed(digits)}`;
const minus = (a, b, key) => a.map((x, r) => x[key] - b[r][key]);
console.log(`${frames.length} lined-up frames from ${dir}, align ${align ? 'on' : 'off'}, ${streamed ? 'streaming types streamed' : 'every frame held'}; engines of ${roots.join(' and ')}; ${rounds} rounds; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
for (const type of types) {
  for (const engine of engines) for (const deghost of [true, false]) await job(engine, type, deghost);
  // runs[e][deghost ? 0 : 1]: engine e's jobs, one a round
  const runs = engines.map(() => [[], []]);
  for (let r = 0; r < rounds; r++) {
    const order = engines.flatMap((_, e) => [[e, true], [e, false]]);
    for (const [e, deghost] of r % 2 === 0 ? order : order.reverse()) runs[e][deghost ? 0 : 1].push(await job(engines[e], type, deghost));
  }
  runs.forEach(([on, off], e) => {
    const name = engines.length > 1 ? `${type} (${roots[e]})` : type;
    console.log(`${name}: CPU ms, deghost on ${summary(on.map((x) => x.cpu))}; off ${summary(off.map((x) => x.cpu))}; deghosting costs ${summary(minus(on, off, 'cpu'))}`);
    console.log(`${name}: wall ms, deghost on ${summary(on.map((x) => x.ms))}; off ${summary(off.map((x) => x.ms))}; deghosting costs ${summary(minus(on, off, 'ms'))}`);
    const stages = (jobs) => Object.fromEntries(Object.keys(jobs[0].stages).map((k) => [k, sorted(jobs.map((x) => x.stages[k]))[jobs.length >> 1]]));
    console.log(`${name}: stages (ms, median of each), deghost on ${JSON.stringify(stages(on))}; off ${JSON.stringify(stages(off))}`);
  });
  if (engines.length > 1) {
    const [[on, off], [baseOn, baseOff]] = runs;
    for (const key of ['ms', 'cpu']) {
      console.log(`${type}: ${key === 'ms' ? 'wall' : 'CPU'} ms, first engine minus base, deghost on ${summary(minus(on, baseOn, key))}; off ${summary(minus(off, baseOff, key))}`);
    }
  }
}
await Promise.all(engines.map((e) => e.close()));
await spool?.discard();

const reference = path.join(root, 'src/blend/engine/deghost/agreement-reference.ts');
if (fs.existsSync(reference)) {
  const { agreementGrid, agreementMask } = await import(path.join(root, 'src/blend/engine/deghost/agreement.ts'));
  const { agreementMaskReference, blockMeansReference } = await import(reference);
  const thumbnails = await Promise.all(bytes.map((b) => sharp(b).resize(1000).raw().toBuffer({ resolveWithObject: true })));
  const grids = thumbnails.map(({ data, info }) => agreementGrid(new Uint8Array(data.buffer, data.byteOffset, data.length), info.width, info.height));
  const { width, height, step } = grids[0];
  // CPU ms a frame of one pass over the frames: `work(k)` for frame k
  const pass = (work) => {
    const cpu = process.cpuUsage();
    for (let k = 1; k < grids.length; k++) work(k);
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / 1000 / (grids.length - 1);
  };
  // the kernels' and the JavaScript's passes alternating, the order alternating per round, after one warm-up each
  const compare = (kernel, javascript) => {
    pass(kernel);
    pass(javascript);
    const times = [[], []];
    for (let r = 0; r < 2 * rounds; r++) for (const which of r % 2 === 0 ? [0, 1] : [1, 0]) times[which].push(pass([kernel, javascript][which]));
    return `kernels ${summary(times[0], 1)}; JavaScript reference ${summary(times[1], 1)}`;
  };
  const raw = (k) => {
    const { data, info } = thumbnails[k];
    return [new Uint8Array(data.buffer, data.byteOffset, data.length), info.width, info.height];
  };
  console.log(
    `grid of a ${thumbnails[0].info.width} × ${thumbnails[0].info.height} thumbnail, CPU ms a frame: ${compare(
      (k) => agreementGrid(...raw(k)),
      (k) => blockMeansReference(...raw(k), step),
    )}`,
  );
  const test = (mask) => (k) => mask(grids[0].data, grids[k].data, width, height);
  console.log(`agreement test on ${width} × ${height} grids, CPU ms a frame: ${compare(test(agreementMask), test(agreementMaskReference))}`);
}
console.log(`load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
await removeInputs();
