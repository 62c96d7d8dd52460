#!/usr/bin/env node
// Runs the benchmarks: `npm run bench` runs them all, `npm run bench -- http` only those named.
// Each benchmark module exports `name`, `description` and `run()`, which resolves to
// { text, markdown, pass, writeDoc, section? }: `text` is printed, `markdown` replaces the module's own
// section of docs/benchmarks.md (or, with `section`, the section of that name: a partial run's). See bench/README.md for the environment variables.
import path from 'node:path';
import { cleanupAll, DOC_FILE, ROOT, runAlone, writeDocSection } from './lib.mjs';

/** Every benchmark, in the order they run. Add new ones here. */
const BENCHMARKS = {
  http: () => import('./http.mjs'),
  events: () => import('./events.mjs'),
  webhooks: () => import('./webhooks.mjs'),
  door: () => import('./door.mjs'),
  blend: () => import('./blend.mjs'),
  upload: () => import('./blend-upload.mjs'),
  stack: () => import('./blend-stack.mjs'),
  'blend-cancel': () => import('./blend-cancel.mjs'),
  soak: () => import('./soak.mjs'),
};

async function main(args) {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(`Usage: npm run bench [-- NAME ...]\nBenchmarks: ${Object.keys(BENCHMARKS).join(', ')}\nSee bench/README.md.`);
    return 0;
  }
  const unknown = args.filter((a) => !(a in BENCHMARKS));
  if (unknown.length) {
    console.error(`Unknown benchmark ${unknown.join(', ')}; known: ${Object.keys(BENCHMARKS).join(', ')}`);
    return 2;
  }
  const selected = args.length ? Object.keys(BENCHMARKS).filter((n) => args.includes(n)) : Object.keys(BENCHMARKS);
  let allPass = true;
  for (const key of selected) {
    const module = await BENCHMARKS[key]();
    console.log(`\n=== ${module.name}: ${module.description}`);
    const started = Date.now();
    const result = await module.run();
    // Servers, databases and temp dirs of this benchmark go before the next one starts.
    await cleanupAll();
    console.log(`\n${result.text}\n`);
    if (result.writeDoc && process.env.BENCH_NO_DOCS !== '1') {
      const section = result.section ?? module.name;
      writeDocSection(section, result.markdown);
      console.log(`Wrote the "${section}" section of ${path.relative(ROOT, DOC_FILE)}`);
    } else {
      console.log(`(${path.relative(ROOT, DOC_FILE)} left as it was)`);
    }
    console.log(`${module.name} took ${Math.round((Date.now() - started) / 1000)} s`);
    allPass &&= result.pass;
  }
  if (!allPass) {
    console.log('\nSome targets were missed (see FAIL above).');
    if (process.env.BENCH_STRICT === '1') return 1;
  }
  return 0;
}

await runAlone(import.meta.url, () => main(process.argv.slice(2)));
