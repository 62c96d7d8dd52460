import { warpModule, warpTranslationModule } from '../align/warp-wasm.js';
import { agreementModule } from '../deghost/agreement-kernels.js';
import { compositeModule } from '../composite/simd.js';
import { blocksModule } from '../image/blocks-simd.js';
import { foldMeanModule } from '../point/fold-simd.js';
import { SIMD_MAX_FRAMES, stackModule, type StackStatistic } from '../point/stack-simd.js';
import { weightedMeanModule } from '../point/stack-weighted-simd.js';
import { SHARPNESS_RADIUS } from '../pyramid/focus.js';
import { focusModule } from '../pyramid/focus-simd.js';
import { rowModule } from '../pyramid/simd.js';
import type { ModuleSource } from './assembler.js';

/**
 * Every WebAssembly module the engine assembles, by name, for what looks at modules rather than
 * runs them: the tests (each one valid, its bytes unchanged) and scripts/wasm-print.ts. A kernel
 * file that adds a module adds it here. Modules generated per parameter are listed for each value
 * the engine uses: a stack statistic and the deghosted mean for every frame count up to SIMD_MAX_FRAMES, focus for every
 * window radius up to the one it uses (the tests use the smaller ones).
 */
export function engineModules(): Map<string, () => ModuleSource> {
  const modules = new Map<string, () => ModuleSource>([
    ['blocks', blocksModule],
    ['rows', rowModule],
    ['composite', compositeModule],
    ['warp', warpModule],
    ['warp-translation', warpTranslationModule],
    ['agreement', agreementModule],
    ['fold-mean', foldMeanModule],
  ]);
  const statistics: StackStatistic[] = ['median', 'mean', 'lighten', 'darken'];
  for (const statistic of statistics) {
    for (let n = 1; n <= SIMD_MAX_FRAMES; n++) modules.set(`stack/${statistic}/${n}`, () => stackModule(statistic, n));
  }
  for (let n = 1; n <= SIMD_MAX_FRAMES; n++) modules.set(`weighted-mean/${n}`, () => weightedMeanModule(n));
  for (let radius = 1; radius <= SHARPNESS_RADIUS; radius++) modules.set(`focus/${radius}`, () => focusModule(radius));
  return modules;
}
