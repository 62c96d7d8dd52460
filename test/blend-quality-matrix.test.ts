import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkerPool } from '../src/blend/engine/threads/pool.js';
import { startQualityApi } from '../scripts/quality/api.js';
import { markdown, photoFiles, runMatrix, summarise } from '../scripts/quality/matrix.js';
import { ENGINES, freshStorage, onCleanup } from './helpers.js';

/**
 * The generalisation matrix of `npm run quality`, reduced: every scenario, one draw each, on two of
 * the photos of test/fixtures/photos per database (the first engine takes the first two photos, the
 * next one the two after), at 320 px wide, every job through the real API. The targets are the
 * report's: every job completes, every result beats the best naive baseline (an exposure fusion:
 * SSIM ≥ 0.9 and fewer clipped pixels than its brackets), and each scenario is on average within
 * 1 dB of its oracle (the same blend of the frames brought back by the known motion).
 */

for (const [e, engine] of ENGINES.entries()) {
  test(`quality matrix, reduced (${engine})`, async (t) => {
    const storage = await freshStorage(t, engine);
    const api = await startQualityApi(storage.env);
    onCleanup(t, () => api.close());
    const pool = new WorkerPool(2);
    onCleanup(t, () => pool.close());
    const photos = photoFiles().slice(2 * e, 2 * e + 2);
    const cases = await runMatrix({ api, pool, photos, draws: 1, width: 320 });
    t.diagnostic(markdown(cases));

    assert.equal(cases.length, 2 * summarise(cases).length);
    for (const c of cases) assert.ok(c.result, `${c.scenario}, ${c.photo}: ${c.why}`);
    for (const c of cases) assert.ok(c.pass, `${c.scenario}, ${c.photo} (seed ${c.seed}): ${c.why}`);
    for (const s of summarise(cases)) assert.ok(s.withinOracle, `${s.scenario}: ${s.psnr.toFixed(2)} dB against the oracle's ${s.oracle.toFixed(2)} dB`);
  });
}
