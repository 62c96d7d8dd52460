// What the load clients (bench/load-client.mjs, bench/rate-client.mjs) keep of the answers they
// get, and how they sum up latencies; small and without dependencies, as the clients run alone.

/** Nearest-rank percentile (p in 0..100) of numbers sorted in ascending order; null if none. */
export function nearestRank(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1];
}

/** p50, p90, p99, max and mean of latencies in ms (all null if there are none). */
export function latencySummary(latencies) {
  const sorted = Float64Array.from(latencies).sort();
  const mean = sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null;
  return { p50: nearestRank(sorted, 50), p90: nearestRank(sorted, 90), p99: nearestRank(sorted, 99), max: nearestRank(sorted, 100), mean };
}

/**
 * Counts an answer in `tally` ({ statuses, codes, samples }): its status, and for an error its
 * problem `code` as `status code`. `sample`: keep the body among the first five samples.
 */
export function countAnswer(tally, status, body, sample = status >= 400) {
  tally.statuses[status] = (tally.statuses[status] ?? 0) + 1;
  if (status >= 400) {
    let code = '?';
    try {
      code = JSON.parse(body).code ?? '?';
    } catch {}
    tally.codes[`${status} ${code}`] = (tally.codes[`${status} ${code}`] ?? 0) + 1;
  }
  if (sample && tally.samples.length < 5) tally.samples.push(`${status} ${String(body).slice(0, 300)}`);
}
