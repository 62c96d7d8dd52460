// What the engine's kept buffers (src/blend/engine/image/buffers.ts) save a job, in-process: the blend
// benchmark's lined-up scene (bench/blend.mjs makeInputs: five 4000×3000 JPEGs) as streamed jobs with
// alignment, their sources spooled as a server spools them, through the engine of this checkout and of
// another (`--base DIR`, its src/ with node_modules beside it) in the same process, the engines'
// order reversed every round, after one warm-up round. Per job: wall and CPU time (every thread), system
// CPU time, minor page faults (/proc/self/stat) and the bytes the pool keeps after it; then the
// medians over the rounds. Not part of `npm run bench` (bench/README.md).
//
//   node --import tsx bench/blend-buffers.mjs --base DIR [--types median,mean] [--rounds 5] [--inputs DIR]
import fs from 'node:fs';
import path from 'node:path';
import { inputFrames } from './blend.mjs';
import { option as arg, roundsOption } from './lib.mjs';

const types = arg('types', 'median,mean').split(',');
const rounds = roundsOption(5);
const roots = [path.join(import.meta.dirname, '..'), ...(arg('base') ? [path.resolve(arg('base'))] : [])];
const { dir, frames, remove: removeInputs } = await inputFrames(arg('inputs'), 'scene');
const bytes = frames.map((f) => fs.readFileSync(path.join(dir, f)));
const minorFaults = () => Number(fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[7]);

const engines = [];
for (const [k, root] of roots.entries()) {
  const { BlendEngine } = await import(path.join(root, 'src/blend/pipeline.ts'));
  const { loadConfig } = await import(path.join(root, 'src/config.ts'));
  const { addressPolicy } = await import(path.join(root, 'src/net/safe-http.ts'));
  const { Spool } = await import(path.join(root, 'src/blend/spool.ts'));
  engines.push({ name: k === 0 ? 'this' : 'base', engine: new BlendEngine(loadConfig({}).blend, addressPolicy(true), 'http://montage.invalid'), Spool });
}

async function job({ engine, Spool }, blendType) {
  const spool = await Spool.create();
  try {
    const sources = await Promise.all(bytes.map((b, i) => spool.write(`image-${i}`, b)));
    const fetched = { sources, pixels: 0, spool, discard: async () => {} };
    const spec = { images: frames, blendType, align: true, preserveBackground: false, deghost: false, outputFormat: 'jpeg' };
    const faults = minorFaults(), cpu = process.cpuUsage(), started = performance.now();
    const result = await engine.run(spec, fetched);
    const used = process.cpuUsage(cpu);
    return {
      wall: Math.round(performance.now() - started),
      cpu: Math.round((used.user + used.system) / 1000),
      sys: Math.round(used.system / 1000),
      faults: minorFaults() - faults,
      keptMB: engine.buffers ? Math.round(engine.buffers.kept / 1e6) : null,
      bytes: result.image.length,
    };
  } finally {
    await spool.discard();
  }
}

const rows = {};
for (let round = 0; round <= rounds; round++) {
  for (const e of round % 2 ? [...engines].reverse() : engines) {
    for (const type of types) {
      const row = await job(e, type);
      console.log(round === 0 ? 'warm-up' : `round ${round}`, e.name, type, JSON.stringify(row));
      if (round > 0) (rows[`${e.name} ${type}`] ??= []).push(row);
    }
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
for (const [key, list] of Object.entries(rows)) {
  console.log(`median ${key}:`, ['wall', 'cpu', 'sys', 'faults', 'keptMB'].map((f) => `${f} ${median(list.map((r) => r[f]))}`).join(', '), `(output ${list[0].bytes} bytes)`);
}
await removeInputs();
process.exit(0);
