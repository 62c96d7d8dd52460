// What alignment costs a blend job, in-process: the blend benchmark's drifted frames (bench/blend.mjs
// makeInputs: five 4000×3000 JPEGs, frames 2–5 moved by 3–15 px, two also turned; `--set scene`: the
// lined-up ones) through the engine of src/blend/pipeline.ts as the server runs it (five frames are
// held, src/blend/memory.ts streamOf; `--streamed`: a type that can stream streams from a spool, as a
// long stack does) with `align` on and off, interleaved (the order alternating per round),
// after one warm-up job of each. Wall time and the process's CPU time (every thread: pool, libvips)
// per job, min and median, and the per-round differences; on a busy machine the CPU figures are the
// steadier ones. Not part of `npm run bench` (bench/README.md).
//
//   node --import tsx bench/blend-align-cost.mjs [--types median,mean] [--rounds 5] [--inputs DIR] [--set drifted|scene] [--streamed]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { inputFrames } from './blend.mjs';
import { option as arg, roundsOption } from './lib.mjs';

const types = arg('types', 'median,mean').split(',');
const rounds = roundsOption(5);
const { dir, frames, remove: removeInputs } = await inputFrames(arg('inputs'), arg('set', 'drifted'));

const { BlendEngine } = await import('../src/blend/pipeline.ts');
const { loadConfig } = await import('../src/config.ts');
const { addressPolicy } = await import('../src/net/safe-http.ts');
const { streamOf } = await import('../src/blend/memory.ts');
const { Spool } = await import('../src/blend/spool.ts');
const engine = new BlendEngine(loadConfig({}).blend, addressPolicy(true), 'http://montage.invalid');
const bytes = frames.map((f) => fs.readFileSync(path.join(dir, f)));
const sizes = await Promise.all(bytes.map((b) => sharp(b).metadata()));
const pixels = sizes.reduce((sum, { width, height }) => sum + width * height, 0);
// A streaming type's images come from the job's spool, as the server fetches them (pipeline.ts fetch).
const spool = await Spool.create();
const spooled = await Promise.all(bytes.map((b, i) => spool.write(`image-${i}`, b)));
const fetchedFor = (type) =>
  streamOf(type, false, process.argv.includes('--streamed') ? Infinity : frames.length) !== null
    ? { sources: spooled, pixels: Math.max(...sizes.map(({ width, height }) => width * height)), spool, discard: async () => {} }
    : { sources: bytes, pixels, spool: null, discard: async () => {} };
const spec = (blendType, align) => ({ images: frames, blendType, align, preserveBackground: false, deghost: false, outputFormat: 'jpeg' });

async function job(type, align) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await engine.run(spec(type, align), fetchedFor(type));
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - started, cpu: (used.user + used.system) / 1000, stages: result.stages, alignment: result.alignment };
}

const sorted = (a) => [...a].sort((x, y) => x - y);
const summary = (a) => `min ${sorted(a)[0].toFixed(0)}, median ${sorted(a)[a.length >> 1].toFixed(0)}`;
console.log(`${frames.length} ${arg("set", "drifted")} frames from ${dir}; ${rounds} rounds; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
for (const type of types) {
  await job(type, true);
  await job(type, false);
  const on = [];
  const off = [];
  for (let r = 0; r < rounds; r++) {
    for (const align of r % 2 === 0 ? [true, false] : [false, true]) (align ? on : off).push(await job(type, align));
  }
  const cost = (key) => on.map((x, r) => x[key] - off[r][key]);
  console.log(`${type}: wall ms, align on ${summary(on.map((x) => x.ms))}; off ${summary(off.map((x) => x.ms))}; alignment costs ${summary(cost('ms'))}`);
  console.log(`${type}: CPU ms, align on ${summary(on.map((x) => x.cpu))}; off ${summary(off.map((x) => x.cpu))}; alignment costs ${summary(cost('cpu'))}`);
  console.log(`${type}: stages of the last aligned job (ms): ${JSON.stringify(on.at(-1).stages)}`);
  console.log(`${type}: its alignment: ${on.at(-1).alignment.map((a) => `${a.method} ${a.shiftPx} px (${a.confidence})`).join('; ')}`);
}
console.log(`load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
await engine.close();
await spool.discard();
await removeInputs();
