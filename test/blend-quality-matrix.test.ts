import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkerPool } from '../src/blend/engine/threads/pool.js';
import { startQualityApi } from '../scripts/quality/api.js';
import { markdown, photoFiles, runMatrix, SCENARIOS, summarise } from '../scripts/quality/matrix.js';
import { ENGINES, freshStorage, onCleanup } from './helpers.js';

/**
 * The generalisation matrix of `npm run quality`, reduced: every scenario once, one draw, at 320 px
 * wide, every job through the real API. Scenario k runs on photo k (mod the photos of
 * test/fixtures/photos), with the full matrix's seed for that case, so a miss here is reproduced by
 * `npm run quality`. The scenarios are dealt between the databases (even indices on the first
 * engine, odd on the next) rather than all run on both: the matrix's subject is the engine, and a
 * job stores the same rows whatever it blends, so one case through each database proves the storage
 * path; running all on both doubled the time (552 s for 44 jobs on a loaded machine) for no more
 * coverage of the engine. The targets are the report's: every job completes, every result beats the
 * best naive baseline or ties it at 0.01 dB (a walking scene over the whole frame, its ghost counted;
 * an exposure fusion: SSIM ≥ 0.9 against its target and fewer clipped pixels
 * than its brackets), and each scenario is within 1 dB of its oracle (the same blend of the frames
 * brought back by the known motion).
 */

for (const [e, engine] of ENGINES.entries()) {
  test(`quality matrix, reduced (${engine})`, async (t) => {
    const storage = await freshStorage(t, engine);
    const api = await startQualityApi(storage.env);
    onCleanup(t, () => api.close());
    const pool = new WorkerPool(2);
    onCleanup(t, () => pool.close());
    const photos = photoFiles();
    const mine = (k: number) => k % ENGINES.length === e;
    const cases = await runMatrix({ api, pool, photos, draws: 1, width: 320, select: (k, p) => mine(k) && p === k % photos.length });
    t.diagnostic(markdown(cases));

    assert.deepEqual(
      cases.map((c) => c.scenario),
      SCENARIOS.filter((_, k) => mine(k)).map((s) => s.name),
    );
    for (const c of cases) assert.ok(c.result, `${c.scenario}, ${c.photo}: ${c.why}`);
    for (const c of cases) assert.ok(c.pass, `${c.scenario}, ${c.photo} (seed ${c.seed}): ${c.why}`);
    for (const s of summarise(cases)) assert.ok(s.withinOracle, `${s.scenario}: ${s.psnr.toFixed(2)} dB against the oracle's ${s.oracle.toFixed(2)} dB`);
  });
}
