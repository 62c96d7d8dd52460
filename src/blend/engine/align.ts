import type { FeatureMatch, Features } from './align-cv.js';
import { thumbnailSize } from './align-grey.js';
import type { LineUp, LineUpReference } from './align-lineup.js';
import { IDENTITY, cornerDisplacement, fromThumbnail, isPlausible, type Homography } from './homography.js';
import { rowRanges, sharedImage, type RgbImage } from './image.js';
import { engineModule, type WorkerPool } from './pool.js';
import type { Estimate } from './refine.js';
import { makeThumbnails, thumbnailFactor } from './thumbnails.js';

/**
 * Pipeline step 3 (BLEND.md): brings every frame onto frame 0. Decisions are taken on grey
 * thumbnails (~1000 px): a frame that already lines up is left alone; the others get an AKAZE +
 * RANSAC homography, verified, then a full-size bilinear warp. All pixel work runs in the pool.
 */

export interface FrameReport {
  index: number;
  /** 'identity': left as is because it already lines up with the reference. */
  method: 'reference' | 'identity' | 'homography';
  /** RANSAC inliers; 0 when the frame was not feature-matched (reference, or lined up as is). */
  inliers: number;
  /** inliers / ratio-test matches; 1 when the frame was not feature-matched. */
  inlierRatio: number;
  /** Normalised correlation with the reference after alignment, on the lightly smoothed grey thumbnails. */
  correlation: number;
  /** Full-size, row-major, normalised (last entry 1): maps a reference pixel to the frame pixel shown there. */
  homography: Homography;
}

export interface AlignResult {
  /** Aligned frames; the reference and 'identity' frames are the input objects themselves. */
  frames: RgbImage[];
  frameReports: FrameReport[];
}

/** The job's `alignment_failed`: frame `index` (0-based) neither lines up nor can be aligned. */
export class AlignmentFailed extends Error {
  readonly code = 'alignment_failed';

  constructor(
    readonly index: number,
    reason: string,
  ) {
    super(`frame ${index} cannot be aligned to frame 0: ${reason}`);
    this.name = 'AlignmentFailed';
  }
}

const LINE_UP = engineModule('align-lineup');
const CV = engineModule('align-cv');
const REFINE = engineModule('refine');
const WARP = engineModule('warp');

/** Correlation as is (smoothed thumbnails) from which a frame that cannot be aligned is taken as lined up (BLEND.md). */
const LINED_UP_CORRELATION = 0.98;
/** Correlation from which two frames show the same scene, so their measured drift can be trusted. */
const RELATED_CORRELATION = 0.5;
/** Full-size pixels a frame may be off and still be left unwarped. */
const LINED_UP_PIXELS = 0.5;
/** Share of the mismatch (1 − correlation) a warp may leave. */
const IMPROVEMENT = 0.9;
const MIN_INLIERS = 10;
const MIN_INLIER_RATIO = 0.3;

// OpenCV.js calls run on the first thread only, which alone loads the library (pool.ts);
// segmentation's model runs on the last (segment.ts).
const ON_CV_THREAD = { slot: 0 };

/** Loads OpenCV.js (~0.5 s) ahead of the first job, so that job does not wait for it. */
export async function prepareAlignment(pool: WorkerPool): Promise<void> {
  await pool.run(CV, 'loadOpenCv', [], ON_CV_THREAD);
}

/** What decides each frame's fate: the thumbnails' scale and size. */
interface Scale {
  factor: number;
  width: number;
  height: number;
  thumbWidth: number;
  thumbHeight: number;
}

/** How far (full-size pixels, worst corner) a thumbnail homography moves the frame. */
function fullSizeDisplacement(h: Homography, s: Scale): number {
  return cornerDisplacement(fromThumbnail(h, s.factor), s.width, s.height);
}

/** Whether a frame already lines up: the same scene, off by at most LINED_UP_PIXELS. */
function linesUp(l: LineUp, s: Scale): boolean {
  return l.correlation >= RELATED_CORRELATION && l.drift * s.factor <= LINED_UP_PIXELS;
}

/** How frame `index` is brought onto frame 0, given its line-up check and, if it does not line up, its feature estimate. */
function decide(index: number, lineUp: LineUp, e: Estimate | undefined, s: Scale): FrameReport {
  const asIs: FrameReport = { index, method: 'identity', inliers: 0, inlierRatio: 1, correlation: lineUp.correlation, homography: IDENTITY };
  if (!e) return asIs;
  let why: string;
  if (!e.homography) why = `no homography fits its ${e.matches} feature matches`;
  else if (e.inliers < MIN_INLIERS || e.inliers < MIN_INLIER_RATIO * e.matches) why = `only ${e.inliers} of ${e.matches} feature matches agree`;
  else if (!isPlausible(e.homography, s.thumbWidth, s.thumbHeight)) why = 'the best homography is not a plausible camera motion';
  else {
    const matched = { inliers: e.inliers, inlierRatio: e.inliers / e.matches };
    if (fullSizeDisplacement(e.homography, s) <= LINED_UP_PIXELS) return { ...asIs, ...matched };
    const warp: FrameReport = { index, method: 'homography', ...matched, correlation: e.correlation, homography: fromThumbnail(e.homography, s.factor) };
    // Bilinear resampling alone smooths noise and lifts the correlation a little, so a warp must remove a tenth of the mismatch.
    if (1 - e.correlation <= IMPROVEMENT * (1 - lineUp.correlation)) return warp;
    // Within a thumbnail pixel, an estimate that brings nothing is noise around "already lines up"
    // (a static camera with people moving: they lower the correlation, not the alignment).
    if (fullSizeDisplacement(e.homography, s) <= s.factor) return { ...asIs, ...matched };
    // A larger motion that the features agree on and that does no harm is a real one.
    if (e.correlation >= lineUp.correlation) return warp;
    why = `warping would not improve its correlation with frame 0 (${lineUp.correlation.toFixed(3)} → ${e.correlation.toFixed(3)})`;
  }
  if (lineUp.correlation >= LINED_UP_CORRELATION) return asIs;
  throw new AlignmentFailed(index, why);
}

/** The line-up checks of frames 1.. against frame 0, under way. */
export interface LineUps {
  reference: Promise<LineUpReference>;
  checks: Array<Promise<LineUp>>;
}

/**
 * Starts the line-up checks (align-lineup.ts), each as soon as its frame's grey thumbnail
 * exists, so a caller still decoding frames can have the first ones checked meanwhile. `first`
 * is frame 0 (it gives the size); `greys` are the grey thumbnails of all frames, in order.
 */
export function checkLineUps(pool: WorkerPool, first: Promise<RgbImage>, greys: Array<Promise<Uint8Array>>): LineUps {
  const size = first.then(({ width, height }) => thumbnailSize(width, height, thumbnailFactor(width, height)));
  const [refGrey, ...rest] = greys;
  const reference = Promise.all([size, refGrey!]).then(([[w, h], grey]) => pool.run<LineUpReference>(LINE_UP, 'lineUpReference', [grey, w, h]));
  const checks = rest.map((grey) => Promise.all([size, reference, grey]).then(([[w, h], ref, g]) => pool.run<LineUp>(LINE_UP, 'checkLineUp', [ref, g, w, h])));
  return { reference, checks };
}

/**
 * Decides how each frame is brought onto frame 0 (frames' pixels in shared memory, image.ts) from
 * their grey thumbnails (thumbnails.ts) and, when the caller started them, their line-up checks;
 * throws AlignmentFailed naming the first frame that cannot be.
 */
export async function estimateAlignment(pool: WorkerPool, frames: RgbImage[], greys: Uint8Array[], lineUps?: LineUps): Promise<FrameReport[]> {
  const first = frames[0];
  if (!first) return [];
  const { width, height } = first;
  const factor = thumbnailFactor(width, height);
  const [thumbWidth, thumbHeight] = thumbnailSize(width, height, factor);
  const scale: Scale = { factor, width, height, thumbWidth, thumbHeight };
  const [ref, ...rest] = greys as [Uint8Array, ...Uint8Array[]];
  lineUps ??= checkLineUps(pool, Promise.resolve(first), greys.map((g) => Promise.resolve(g)));
  const [reference, checked] = await Promise.all([lineUps.reference, Promise.all(lineUps.checks)]);

  const estimates = new Map<number, Promise<Estimate>>();
  const toMatch = rest.flatMap((grey, k) => (linesUp(checked[k]!, scale) ? [] : [{ index: k + 1, grey }]));
  if (toMatch.length > 0) {
    // Each pair is matched as soon as its features exist, and refined on another thread while the
    // OpenCV thread detects the next frame's features.
    const refFeatures = pool.run<Features>(CV, 'detectFeatures', [ref, thumbWidth, thumbHeight], ON_CV_THREAD);
    for (const { index, grey } of toMatch) {
      const features = pool.run<Features>(CV, 'detectFeatures', [grey, thumbWidth, thumbHeight], ON_CV_THREAD);
      const estimate = Promise.all([refFeatures, features])
        .then(([r, f]) => pool.run<FeatureMatch>(CV, 'matchHomography', [r, f], ON_CV_THREAD))
        .then((match) => pool.run<Estimate>(REFINE, 'refineEstimate', [match, reference.smoothed, grey, thumbWidth, thumbHeight]));
      estimates.set(index, estimate);
    }
    await Promise.allSettled(estimates.values());
  }

  const reports: FrameReport[] = [{ index: 0, method: 'reference', inliers: 0, inlierRatio: 1, correlation: 1, homography: IDENTITY }];
  for (const [k, lineUp] of checked.entries()) reports.push(decide(k + 1, lineUp, await estimates.get(k + 1), scale));
  return reports;
}

/** Warps the 'homography' frames at full size, each split into row ranges across the pool's threads. */
export async function warpFrames(pool: WorkerPool, frames: RgbImage[], reports: FrameReport[]): Promise<RgbImage[]> {
  const out = frames.slice();
  const tasks: unknown[][] = [];
  for (const r of reports) {
    const frame = frames[r.index];
    if (r.method !== 'homography' || !frame) continue;
    const warped = sharedImage(frame.width, frame.height);
    out[r.index] = warped;
    for (const [start, end] of rowRanges(frame.height, pool.size)) tasks.push([frame, warped, r.homography, start, end]);
  }
  await pool.all(WARP, 'warpRows', tasks);
  return out;
}

/**
 * Aligns every frame to frame 0 (all frames have its size; pixels in shared memory, image.ts).
 * `greys` are the frames' grey thumbnails when the caller already has them, `lineUps` their
 * line-up checks when the caller started them (checkLineUps).
 */
export async function alignFrames(pool: WorkerPool, frames: RgbImage[], greys?: Uint8Array[], lineUps?: LineUps): Promise<AlignResult> {
  greys ??= (await makeThumbnails(pool, frames, true)).map((t) => t.grey!);
  const frameReports = await estimateAlignment(pool, frames, greys, lineUps);
  return { frames: await warpFrames(pool, frames, frameReports), frameReports };
}
