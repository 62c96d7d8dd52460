// Two builds of Montage side by side, end to end (docs/benchmarks.md, "Blend"): a server of this
// checkout and one of another checkout (`--base DIR`, built: its dist/ and node_modules present),
// each in its own process on its own SQLite data, given the blend benchmark's inputs (bench/blend.mjs
// makeInputs: 5 × 4000×3000 JPEGs per set) over loopback. Every round runs each type's job once on
// each server, the order alternating from round to round, so that a machine whose speed drifts
// (other work, a neighbour on the host) slows both alike; the figures are the medians over the
// rounds and the median of the per-round ratios. This is how "not slower than before" is decided on
// a machine where two separate benchmark runs differ by more than the bound. Not part of
// `npm run bench` (bench/README.md).
//
// `--this-options JSON` adds options to this checkout's jobs only (e.g. '{"deghost":false}' against a
// base that had no deghosting).
//
//   node bench/blend-ab.mjs --base DIR [--types median,mean,...] [--rounds 5] [--inputs DIR] [--drifted median,mean] [--this-options JSON]
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { fileServer, INPUT_SETS, inputFrames, runJob } from './blend.mjs';
import { option as arg, build, createAccountAndKey, freePort, makeTempDir, median, montageEnv, montageNodeFlags, ROOT, roundsOption, runCommand, startProcess, waitForHttp } from './lib.mjs';

const base = arg('base');
if (!base) throw new Error('--base DIR: the other checkout (built) to compare with');
const rounds = roundsOption(5);
// this checkout's server runs from its dist/, compiled first as the other benchmarks do (BENCH_NO_BUILD=1 skips it); --base must be built already
await build();
const { BLEND_REGISTRY } = await import(pathToFileURL(path.join(ROOT, 'dist/blend/engine/registry.js')).href);
const types = arg('types', Object.keys(BLEND_REGISTRY).join(',')).split(',');
const driftedTypes = arg('drifted', 'median,mean').split(',').filter(Boolean);
const thisOptions = JSON.parse(arg('this-options', '{}'));
const inputs = arg('inputs');
const { dir, remove } = inputs ? { dir: inputs, remove: async () => {} } : await (async () => {
  const made = await inputFrames(undefined, 'scene');
  return { dir: made.dir, remove: made.remove };
})();
const { server, base: imageBase } = await fileServer(dir);
const setUrls = async (set) => (await inputFrames(dir, set)).frames.map((f) => `${imageBase}/${f}`);

/** A server of the checkout at `root`, with an account and key made by its own CLI. */
async function serverOf(root, label) {
  const port = await freePort();
  const env = montageEnv('sqlite', { montageDir: makeTempDir(`montage-bench-ab-${label}-`).dir }, port, { MONTAGE_ALLOW_PRIVATE_NETWORK: '1' });
  const bin = path.join(root, 'bin', 'montage.js');
  const cli = (cliEnv, ...args) => runCommand(process.execPath, [...montageNodeFlags(), bin, ...args], { env: cliEnv, label: `${label}: montage ${args.join(' ')}`, cwd: root });
  const apiKey = await createAccountAndKey(env, 'bench@example.com', cli);
  const proc = startProcess(`${label}: montage serve`, process.execPath, [...montageNodeFlags(), bin, 'serve'], { env, cwd: root });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(proc, `${url}/healthz`);
  return { label, proc, base: url, apiKey };
}

const servers = [await serverOf(ROOT, 'this'), await serverOf(path.resolve(base), 'base')];
const jobs = [
  ...types.map((type) => ({ name: type, type, set: INPUT_SETS[BLEND_REGISTRY[type].input], align: true })),
  ...driftedTypes.map((type) => ({ name: `${type} drifted`, type, set: 'drifted', align: true })),
  ...driftedTypes.map((type) => ({ name: `${type} drifted, align off`, type, set: 'drifted', align: false })),
];
for (const job of jobs) job.urls = await setUrls(job.set);
console.log(`this: ${ROOT}${Object.keys(thisOptions).length ? ` with ${JSON.stringify(thisOptions)}` : ''}; base: ${path.resolve(base)}; ${rounds} rounds`);
const times = new Map(jobs.map((j) => [j.name, { this: [], base: [] }]));
// a warm-up job of each kind on each server: threads, kernels, OpenCV and the model load once per process
const optionsOf = (s) => (s.label === 'this' ? thisOptions : {});
for (const s of servers) for (const job of jobs) await runJob(s, job.urls, job.type, false, job.align, optionsOf(s));
for (let r = 0; r < rounds; r++) {
  for (const job of jobs) {
    for (const s of r % 2 === 0 ? servers : [...servers].reverse()) times.get(job.name)[s.label].push((await runJob(s, job.urls, job.type, false, job.align, optionsOf(s))).ms);
  }
  console.log(`  round ${r + 1} done`);
}
const rows = jobs.map((job) => {
  const t = times.get(job.name);
  const ratios = t.this.map((ms, r) => ms / t.base[r]);
  return { job: job.name, base: median(t.base), this: median(t.this), ratio: median(ratios), spread: `${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}` };
});
console.log('| job | base s | this s | this / base (median of rounds) | per-round ratios |');
console.log('|---|---:|---:|---:|---|');
for (const row of rows) console.log(`| ${row.job} | ${(row.base / 1000).toFixed(2)} | ${(row.this / 1000).toFixed(2)} | ${row.ratio.toFixed(3)} | ${row.spread} |`);
for (const s of servers) await s.proc.stop();
server.close();
await remove();
