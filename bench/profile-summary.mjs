#!/usr/bin/env node
// Summarises a V8 .cpuprofile (from `node --cpu-prof`): the functions with the most self time,
// and self time summed per package / source file, so the costly parts of a request path stand out.
// Usage: node bench/profile-summary.mjs FILE.cpuprofile [--top N]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Where a script lives, shortened: `fastify/lib/route.js`, `dist/http/guard.js`, `node:internal/...`. */
export function whereIs(url) {
  if (!url) return '';
  let file = url.startsWith('file://') ? fileURLToPath(url) : url;
  const nm = file.lastIndexOf('/node_modules/');
  if (nm >= 0) return file.slice(nm + '/node_modules/'.length);
  if (file.startsWith(`${ROOT}/`)) return file.slice(ROOT.length + 1);
  return file;
}

/** The package (or `montage dist/<area>`, `node internals`, `(native/GC)`) a script belongs to. */
export function groupOf(url, functionName) {
  if (!url) return functionName.startsWith('(') ? functionName : '(native/V8 builtins)';
  const where = whereIs(url);
  if (url.includes('/node_modules/')) {
    const parts = where.split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (where.startsWith('dist/')) return `montage ${where}`;
  if (where.startsWith('node:')) return 'node core';
  return where;
}

export function summarise(file, top = 25) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const { nodes, samples, timeDeltas } = profile;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const selfUs = new Map();
  for (let i = 0; i < samples.length; i++) selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + (timeDeltas[i] ?? 0));
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const idle = [...selfUs].filter(([id]) => byId.get(id)?.callFrame.functionName === '(idle)').reduce((a, [, us]) => a + us, 0);
  const busy = total - idle;

  // Inclusive time of Montage's own functions (dist/, or src/ under tsx): each sample counts once
  // for every distinct such function on its stack, so recursion is not counted twice.
  const parent = new Map();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const ownKey = new Map();
  for (const n of nodes) {
    const { functionName, url, lineNumber } = n.callFrame;
    const where = whereIs(url);
    if (where.startsWith('dist/') || where.startsWith('src/')) ownKey.set(n.id, `${functionName || '(anonymous)'}  ${where}:${lineNumber + 1}`);
  }
  const stackKeys = new Map();
  const keysOf = (id) => {
    let keys = stackKeys.get(id);
    if (keys) return keys;
    const up = parent.has(id) ? keysOf(parent.get(id)) : new Set();
    const own = ownKey.get(id);
    keys = own && !up.has(own) ? new Set([...up, own]) : up;
    stackKeys.set(id, keys);
    return keys;
  };
  const inclusive = new Map();
  for (const [id, us] of selfUs) for (const key of keysOf(id)) inclusive.set(key, (inclusive.get(key) ?? 0) + us);

  const fnTotals = new Map();
  const groupTotals = new Map();
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    if (functionName === '(idle)') continue;
    const name = functionName || '(anonymous)';
    const key = `${name}  ${whereIs(url)}${url ? `:${lineNumber + 1}` : ''}`;
    fnTotals.set(key, (fnTotals.get(key) ?? 0) + us);
    const group = groupOf(url, name);
    groupTotals.set(group, (groupTotals.get(group) ?? 0) + us);
  }
  const rank = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1000, pctBusy: (100 * us) / busy }));
  return {
    totalMs: total / 1000,
    busyMs: busy / 1000,
    idleMs: idle / 1000,
    functions: rank(fnTotals),
    groups: rank(groupTotals),
    ownInclusive: rank(inclusive),
  };
}

/** `requests`: how many requests the profiled process served, to show microseconds per request. */
export function formatSummary(summary, title = 'CPU profile', requests = 0) {
  const perRequest = (msTotal) => (requests > 0 ? `  ${((msTotal * 1000) / requests).toFixed(1).padStart(6)} us/req` : '');
  const line = (r) => `  ${r.pctBusy.toFixed(1).padStart(5)}%  ${r.ms.toFixed(0).padStart(7)} ms${perRequest(r.ms)}  ${r.name}`;
  return [
    `${title}: ${summary.busyMs.toFixed(0)} ms busy of ${summary.totalMs.toFixed(0)} ms sampled` +
      (requests > 0 ? `; ${requests} requests served, ${((summary.busyMs * 1000) / requests).toFixed(0)} us of CPU per request` : ''),
    'Self time by package / file (% of busy time):',
    ...summary.groups.map(line),
    'Top functions by self time (% of busy time):',
    ...summary.functions.map(line),
    ...(summary.ownInclusive.length
      ? ["Montage's own functions by total time, callees included (% of busy time):", ...summary.ownInclusive.map(line)]
      : []),
  ].join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 25;
  if (args.length === 0) {
    console.error('Usage: node bench/profile-summary.mjs FILE.cpuprofile [--top N]');
    process.exit(1);
  }
  for (const file of args) console.log(`${formatSummary(summarise(file, top), path.basename(file))}\n`);
}
