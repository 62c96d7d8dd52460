/**
 * Every function a pool thread may run (threads/pool.ts), by the name callers give it. Each entry
 * names its module by a loader and the function by its export, checked against the module's
 * type: a renamed or removed function fails the build, and `pool.run(name, args)` checks `args`
 * and the result against the function's own signature. The loaders run in the thread that runs
 * the task, on its first task of that module, so OpenCV.js (align/cv.ts) and the segmentation
 * model (segment/model.ts) load only in the thread they are pinned to.
 */

/** A function a thread may run; its arguments and result are structured-cloned. */
export type TaskFunction = (...args: never[]) => unknown;

declare const signature: unique symbol;

/** One entry of a task table: where the function is, and (for the type checker only) its signature. */
export interface Task<F extends TaskFunction> {
  load(): Promise<object>;
  fn: string;
  readonly [signature]?: F;
}

/** A module's exports that are functions. */
type FunctionNames<M> = { [K in keyof M]: M[K] extends TaskFunction ? K : never }[keyof M] & string;

/** The entry for export `fn` of the module `load` imports. */
export function task<M extends object, K extends FunctionNames<M>>(load: () => Promise<M>, fn: K): Task<Extract<M[K], TaskFunction>> {
  return { load, fn };
}

export type TaskTable = Record<string, Task<TaskFunction>>;

/** The functions behind a table's tasks, by name. */
export type TaskFunctions<T extends TaskTable> = { [N in keyof T]: NonNullable<T[N][typeof signature]> };

const stack = () => import('../point/stack.js');
const layers = () => import('../point/layers.js');
const weighted = () => import('../point/stack-weighted.js');
const fold = () => import('../point/fold.js');
const agreement = () => import('../deghost/agreement.js');
const focus = () => import('../pyramid/focus.js');
const pyramid = () => import('../pyramid/pyramid.js');
const compositeKernels = () => import('../composite/kernels.js');
const compositePyramid = () => import('../composite/pyramid.js');
const analysis = () => import('../image/analysis.js');
const lineup = () => import('../align/lineup.js');
const global = () => import('../align/global.js');
const cv = () => import('../align/cv.js');
const refine = () => import('../align/refine.js');
const warp = () => import('../align/warp.js');
const mask = () => import('../segment/mask.js');
const model = () => import('../segment/model.js');
const gc = () => import('./gc.js');

export const TASKS = {
  // point-wise blends (point/)
  meanRows: task(stack, 'meanRows'),
  medianRows: task(stack, 'medianRows'),
  lightenRows: task(stack, 'lightenRows'),
  darkenRows: task(stack, 'darkenRows'),
  multiplyRows: task(layers, 'multiplyRows'),
  screenRows: task(layers, 'screenRows'),
  overlayRows: task(layers, 'overlayRows'),
  softLightRows: task(layers, 'softLightRows'),
  weightedMeanRows: task(weighted, 'weightedMeanRows'),
  // streaming stacks, one frame at a time (point/fold.ts)
  foldFirstRows: task(fold, 'foldFirstRows'),
  foldFrameRows: task(fold, 'foldFrameRows'),
  finishFoldRows: task(fold, 'finishFoldRows'),
  // deghosting (deghost/)
  agreementGrid: task(agreement, 'agreementGrid'),
  agreementMask: task(agreement, 'agreementMask'),
  meanGrey: task(agreement, 'meanGrey'),
  upsampleMaskRows: task(agreement, 'upsampleMaskRows'),
  // exposure fusion and focus stacking (pyramid/)
  sharpestFrameRows: task(focus, 'sharpestFrameRows'),
  levelOneRows: task(pyramid, 'levelOneRows'),
  reduceRows: task(pyramid, 'reduceRows'),
  accumulateRows: task(pyramid, 'accumulateRows'),
  expandIntoRows: task(pyramid, 'expandIntoRows'),
  collapseLevelZeroRows: task(pyramid, 'collapseLevelZeroRows'),
  exposureSumRows: task(pyramid, 'exposureSumRows'),
  // composite and preserveBackground (composite/)
  plateMedianRows: task(compositeKernels, 'medianRows'),
  haloPlane: task(compositeKernels, 'haloPlane'),
  ownerRows: task(compositeKernels, 'ownerRows'),
  cellSumRows: task(compositeKernels, 'cellSumRows'),
  baseRows: task(compositeKernels, 'baseRows'),
  finishRows: task(compositeKernels, 'finishRows'),
  keepRows: task(compositeKernels, 'keepRows'),
  collapse: task(compositePyramid, 'collapse'),
  // thumbnails, statistics and the score (image/)
  thumbnailRows: task(analysis, 'thumbnailRows'),
  frameStats: task(analysis, 'frameStats'),
  blockCorrelation: task(analysis, 'blockCorrelation'),
  ghostingSum: task(analysis, 'ghostingSum'),
  // alignment (align/); the OpenCV.js tasks run on thread 0 only
  lineUpReference: task(lineup, 'lineUpReference'),
  checkLineUp: task(lineup, 'checkLineUp'),
  lineUpAfter: task(lineup, 'lineUpAfter'),
  globalEstimate: task(global, 'globalEstimate'),
  judgeMotions: task(global, 'judgeMotions'),
  loadOpenCv: task(cv, 'loadOpenCv'),
  detectFeatures: task(cv, 'detectFeatures'),
  matchHomography: task(cv, 'matchHomography'),
  refineEstimate: task(refine, 'refineEstimate'),
  warpRows: task(warp, 'warpRows'),
  warpThumbnailRows: task(warp, 'warpThumbnailRows'),
  // segmentation (segment/); the model runs on the last thread only
  workingCopy: task(mask, 'workingCopy'),
  personWeights: task(model, 'personWeights'),
  maskFromWeights: task(mask, 'maskFromWeights'),
  // housekeeping (threads/)
  collectGarbage: task(gc, 'collectGarbage'),
} satisfies TaskTable;

export type EngineTasks = typeof TASKS;
