import type { LineUp, LineUpReference } from './lineup.js';
import { agreeingBlocks, agreeingShare, blockValue, motionFits, staticBlocks, type Agreement, type BlockScores, type GlobalEstimate } from './global.js';
import { IDENTITY, apply, centreTranslation, cornerDisplacement, fromThumbnail, isPlausible, type Homography } from './homography.js';
import { rowRanges, sharedImage, thumbnailSize, type RgbImage } from '../image/image.js';
import type { TaskArgs, TaskResult, WorkerPool } from '../threads/pool.js';
import type { Estimate } from './refine.js';
import { makeThumbnails, thumbnailFactor } from '../image/thumbnails.js';

/**
 * Pipeline step 3 (docs/blend.md, How the engine works): brings every frame onto frame 0.
 * Decisions are taken on grey thumbnails (~1000 px): a frame that already lines up is left alone;
 * for the others an AKAZE + RANSAC homography and, unless it is strong and confirmed (by its
 * blocks, or by the line-up check once corrected), a global estimate (align/global.ts) are weighed
 * by how many of the frame's blocks each makes agree with the reference, then the frame gets a
 * full-size bicubic warp (align/warp.ts). Only a frame that agrees under no motion fails: it shows another scene.
 * All pixel work runs in the pool.
 */

export interface FrameReport {
  index: number;
  /**
   * 'identity': left as is, because it already lines up with the reference; 'translation': moved by
   * the phase-correlation shift or by the shift the feature homography gives the frame's centre;
   * 'homography': warped by a feature or refined global homography.
   */
  method: 'reference' | 'identity' | 'translation' | 'homography';
  /** How far (full-size pixels, at the worst corner) alignment moves the frame; 0 for 'reference' and 'identity'. */
  shiftPx: number;
  /** Share of the reference's textured blocks that agree with the frame once aligned (align/global.ts); 1 for the reference. */
  confidence: number;
  /** RANSAC inliers; 0 when the frame's motion does not come from feature matches. */
  inliers: number;
  /** inliers / ratio-test matches; 1 when the frame's motion does not come from feature matches. */
  inlierRatio: number;
  /** Full-size, row-major, normalised (last entry 1): maps a reference pixel to the frame pixel shown there. */
  homography: Homography;
  /**
   * How the motion was found: 'lined-up' for a frame left as it is without estimates (and the
   * reference); 'features' when a strong feature homography decided alone, its blocks confirming
   * it (confirms) or, corrected by their residual motion, lining up (align/lineup.ts lineUpAfter);
   * 'weighed' when the global estimate joined it and the blocks chose among them all.
   */
  route: 'lined-up' | 'features' | 'weighed';
}

export interface AlignResult {
  /** Aligned frames; the reference and 'identity' frames are the input objects themselves. */
  frames: RgbImage[];
  /** The aligned frames' thumbnails where alignment moved them (warpFrame); null for a frame left as it is. */
  thumbnails: Array<RgbImage | null>;
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

/** Correlation from which two frames show the same scene, so their measured drift can be trusted. */
const RELATED_CORRELATION = 0.5;
/** Full-size pixels a frame may be off and still be left unwarped; also how close two motions must be to count as one. */
const LINED_UP_PIXELS = 0.5;
const MIN_INLIERS = 10;
const MIN_INLIER_RATIO = 0.3;
/**
 * Share of the reference's textured blocks that must agree with a frame, under the best motion
 * tried, for it to show the same scene (docs/blend.md). A block of an unrelated photo reaches
 * AGREES by chance in about 2 % of cases (measured: at most 1 block of 48–64 over 18 pairs of
 * photos), so a tenth of 64 blocks is a tail of well under 1 %; a frame of the scene keeps the
 * blocks that neither its people nor the reference's cover, which is more than that even when
 * each frame is a third covered.
 */
const SAME_SCENE = 0.1;
/** Inliers, and their share of the ratio-test matches, from which a feature homography is strong (strongFeatures): well above MIN_INLIERS and MIN_INLIER_RATIO. */
const STRONG_INLIERS = 30;
const STRONG_INLIER_RATIO = 0.5;
/**
 * Fewest textured blocks that must agree under a strong feature homography to confirm it
 * (confirms). SAME_SCENE of them may fail, rounded down: from 20 agreeing blocks that is at least
 * two, so one block near AGREES that flips with the noise neither confirms a homography nor
 * breaks one; with fewer textured blocks (a bare sky, fog) a share moves in steps too coarse to
 * tell "nearly all" from "most", and the motions are weighed as usual.
 */
const MIN_CONFIRMING = 20;
/** One-sided sign test at 1 %: how many standard deviations the wins less the losses of a richer motion must reach. */
const SIGNIFICANT = 2.33;

// OpenCV.js calls run on the first thread only, which alone loads the library (threads/pool.ts);
// segmentation's model runs on the last (segment/segment.ts).
const ON_CV_THREAD = { slot: 0 };

/** Loads OpenCV.js (~0.5 s) ahead of the first job, so that job does not wait for it. */
export async function prepareAlignment(pool: WorkerPool): Promise<void> {
  await pool.run('loadOpenCv', [], ON_CV_THREAD);
}

/** What decides each frame's fate: the thumbnails' scale and size. */
interface Scale {
  factor: number;
  width: number;
  height: number;
  thumbWidth: number;
  thumbHeight: number;
}

/**
 * Whether a frame already lines up: the same scene, off by at most LINED_UP_PIXELS. Its measured
 * drift counts only when enough of the reference's textured blocks agree with the frame as it is
 * (SAME_SCENE, the share that tells the same scene under the right motion): the drift is fitted
 * to the blocks whose content did not change, and where none agrees (a smooth sky shifted by ten
 * pixels), what is left to fit is not the scene's motion. Such a frame goes through alignment,
 * where leaving it as it is stays one of the motions weighed.
 */
function linesUp(l: LineUp, s: Scale): boolean {
  return l.correlation >= RELATED_CORRELATION && l.agreement >= SAME_SCENE && l.drift * s.factor <= LINED_UP_PIXELS;
}

/** One way of bringing a frame onto the reference, as a thumbnail homography. */
interface Candidate {
  method: 'identity' | 'translation' | 'homography';
  homography: Homography;
  inliers: number;
  inlierRatio: number;
  /**
   * A simplification of the candidate after it (the feature homography's centre shift): it stands
   * in for a richer motion only when the blocks do not favour that motion significantly (decide's
   * sign test), not for being within LINED_UP_PIXELS of it. A turn of a tenth of a degree moves a
   * thumbnail's corners by less than that, yet the blocks see it and the result is sharper for it.
   */
  byBlocksOnly?: true;
}

/** Largest distance (full-size pixels) between where two thumbnail homographies send the frame's corners. */
function apart(a: Homography, b: Homography, s: Scale): number {
  const [fa, fb] = [fromThumbnail(a, s.factor), fromThumbnail(b, s.factor)];
  let most = 0;
  for (const [x, y] of [[0, 0], [s.width - 1, 0], [0, s.height - 1], [s.width - 1, s.height - 1]] as const) {
    const [u, v] = apply(fa, x, y);
    const [p, q] = apply(fb, x, y);
    most = Math.max(most, Math.hypot(u - p, v - q));
  }
  return most;
}

/** Why a feature estimate is not a candidate; null when it is one. */
function featureFault(e: Estimate, s: Scale): string | null {
  if (!e.homography) return `no homography fits its ${e.matches} feature matches`;
  if (e.inliers < MIN_INLIERS || e.inliers < MIN_INLIER_RATIO * e.matches) return `only ${e.inliers} of ${e.matches} feature matches agree`;
  if (!isPlausible(e.homography, s.thumbWidth, s.thumbHeight)) return 'the best homography is not a plausible camera motion';
  return null;
}

/**
 * A feature estimate strong enough to stand without the global estimate, once its blocks confirm
 * it (`confirms`): well inside the RANSAC thresholds (featureFault), plausible, and bringing the
 * frame closer to the reference than it is.
 */
function strongFeatures(e: Estimate, lineUp: LineUp, s: Scale): boolean {
  return featureFault(e, s) === null && e.inliers >= STRONG_INLIERS && e.inliers >= STRONG_INLIER_RATIO * e.matches && e.correlation > lineUp.correlation;
}

/**
 * Whether the blocks confirm a strong feature homography (candidate `homography`; candidate 0 is
 * the frame as it is), so that
 * the global estimate cannot change the decision: at least MIN_CONFIRMING textured blocks agree
 * under it, no fewer than as the frame is, and those that do not are no more than SAME_SCENE of
 * them. The global estimate could only win (decide) on the blocks that fit it better; on the ones
 * that agree under the homography both motions are refined by the same Lucas–Kanade on the same
 * pixels and fit alike, so what it could add are the failing blocks: at most a tenth, the share
 * that the same-scene rule counts as no evidence at all. A share alone would not do: when the
 * features bunch in one region and the homography drifts at the far side, half of the blocks can
 * agree under it while a global motion fits nearly all of them, and must then be weighed.
 */
function confirms(agreement: Agreement, homography: number): boolean {
  const [asIs, features] = [agreement.scores[0], agreement.scores[homography]].map((scores) => (scores ? agreeingBlocks(scores) : undefined));
  if (asIs === undefined || features === undefined) return false;
  return features >= MIN_CONFIRMING && features >= asIs && agreement.textured - features <= SAME_SCENE * agreement.textured;
}

/** The motions tried for a frame that does not line up as it is, simplest (and then best founded) first; without the global estimate's when `g` is null. */
function candidatesOf(lineUp: LineUp, e: Estimate | undefined, g: GlobalEstimate | null, s: Scale): Candidate[] {
  const none = { inliers: 0, inlierRatio: 1 };
  const list: Candidate[] = [{ method: 'identity', homography: IDENTITY, ...none }];
  if (g) list.push({ method: 'translation', homography: g.translation, ...none });
  // Too few inliers to trust on their own, a plausible feature homography is still worth judging by
  // its blocks; ahead of the global one, as the stronger evidence when both fit alike. Its centre's
  // shift comes first: the cheaper warp, when the blocks see no turn or tilt beyond it.
  if (e && e.homography && isPlausible(e.homography, s.thumbWidth, s.thumbHeight)) {
    const fromFeatures = { inliers: e.inliers, inlierRatio: e.inliers / e.matches };
    list.push({ method: 'translation', homography: centreTranslation(e.homography, s.thumbWidth, s.thumbHeight), ...fromFeatures, byBlocksOnly: true });
    list.push({ method: 'homography', homography: e.homography, ...fromFeatures });
  }
  if (g?.refined) list.push({ method: 'homography', homography: g.refined, ...none });
  return list;
}

/**
 * How frame `index`, which does not line up as it is, is brought onto frame 0: the candidate
 * motion its agreeing blocks favour, or a simpler one within LINED_UP_PIXELS of it. Throws
 * AlignmentFailed when no motion makes SAME_SCENE of the textured blocks agree: another scene.
 */
function decide(index: number, candidates: Candidate[], agreement: Agreement, e: Estimate | undefined, s: Scale): FrameReport {
  const report = (c: Candidate, confidence: number): FrameReport => {
    const full = fromThumbnail(c.homography, s.factor);
    // a shift stays exactly one at full size (h0 = h4 = 1, no terms beyond the shift's), as the warp's fixed-weight path asks
    const homography = c.method === 'identity' ? IDENTITY : c.method === 'translation' ? [1, 0, full[2]!, 0, 1, full[5]!, 0, 0, 1] : full;
    const shiftPx = c.method === 'identity' ? 0 : cornerDisplacement(homography, s.width, s.height);
    return { index, method: c.method, shiftPx: round(shiftPx, 2), confidence: round(confidence, 3), inliers: c.inliers, inlierRatio: c.inlierRatio, homography, route: 'weighed' };
  };
  const shares = agreement.scores.map((scores) => agreeingShare(agreement, scores));
  // A reference without texture anywhere (fog, a blank wall) cannot tell one motion from another.
  if (agreement.textured === 0) return report(candidates[0]!, 0);
  const most = Math.max(...shares);
  if (most < SAME_SCENE) {
    const agreeing = Math.round(most * agreement.textured);
    const features = e ? featureFault(e, s) : null;
    throw new AlignmentFailed(
      index,
      `it shows another scene: at most ${agreeing} of its ${agreement.textured} textured blocks agree with frame 0 under any motion tried` +
        (features ? ` (features: ${features})` : '') +
        // what else reads so, and what to do about it (QA: a sideways frame, a set of dark frames of noise alone)
        '; a frame turned a quarter without an EXIF orientation tag, or one of sensor noise alone, reads so too: turn it upright, or send frames that already line up with options.align false',
    );
  }
  // The blocks that agree under some motion are the scene's static part; the motion that fits them
  // best wins, unless a simpler motion fits them as well: within LINED_UP_PIXELS of it (not for a
  // byBlocksOnly one), or not beaten by it in significantly more blocks than it beats it (a sign
  // test). Focus blur or a bare sky lets a homography's extra parameters wander, and those
  // wanderings fit no better.
  const blocks = staticBlocks(agreement);
  const value = (c: number, k: number) => blockValue(agreement.scores[c]!, k);
  const fit = motionFits(agreement);
  const best = fit.indexOf(Math.max(...fit));
  const beats = (a: number, b: number): boolean => {
    let [wins, losses] = [0, 0];
    for (const k of blocks) {
      if (value(a, k) > value(b, k)) wins++;
      else if (value(a, k) < value(b, k)) losses++;
    }
    return wins - losses > SIGNIFICANT * Math.sqrt(wins + losses);
  };
  const chosen = candidates.findIndex((c, i) => i === best || (!c.byBlocksOnly && apart(c.homography, candidates[best]!.homography, s) <= LINED_UP_PIXELS) || !beats(best, i));
  return report(candidates[chosen]!, shares[chosen]!);
}

const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;

/** The line-up checks of frames 1.. against frame 0, under way. */
export interface LineUps {
  reference: Promise<LineUpReference>;
  checks: Array<Promise<LineUp>>;
}

/**
 * Starts the line-up checks (align/lineup.ts), each as soon as its frame's grey thumbnail
 * exists, so a caller still decoding frames can have the first ones checked meanwhile. `first`
 * is frame 0 (it gives the size); `greys` are the grey thumbnails of all frames, in order.
 */
export function checkLineUps(pool: WorkerPool, first: Promise<RgbImage>, greys: Array<Promise<Uint8Array>>): LineUps {
  const size = first.then(({ width, height }) => thumbnailSize(width, height, thumbnailFactor(width, height)));
  const [refGrey, ...rest] = greys;
  const reference = Promise.all([size, refGrey!]).then(([[w, h], grey]) => pool.run('lineUpReference', [grey, w, h]));
  const checks = rest.map((grey) => Promise.all([size, reference, grey]).then(([[w, h], ref, g]) => pool.run('checkLineUp', [ref, g, w, h])));
  return { reference, checks };
}

/**
 * Brings frames onto one reference frame, one at a time: what alignment keeps of frame 0 (its grey
 * thumbnail, its line-up reference and, once a frame needs them, its features), so that a caller
 * streaming a long stack decides and warps each frame as it arrives (pipeline/stream.ts) without
 * holding the others.
 */
export interface FrameAligner {
  /** A frame's line-up check against frame 0 (align/lineup.ts), from its grey thumbnail. */
  check(grey: Uint8Array): Promise<LineUp>;
  /** How frame `index` (≥ 1) is brought onto frame 0, from its grey thumbnail and its line-up check; rejects with AlignmentFailed for another scene. */
  decide(index: number, grey: Uint8Array, check: Promise<LineUp>): Promise<FrameReport>;
}

/** Frame 0's report: the reference, which never moves. */
export const REFERENCE_REPORT: FrameReport = { index: 0, method: 'reference', shiftPx: 0, confidence: 1, inliers: 0, inlierRatio: 1, homography: IDENTITY, route: 'lined-up' };

/**
 * The aligner of frames of frame 0's size (`width` × `height`) to frame 0, from its grey thumbnail
 * (`refGrey`); `reference` is its line-up reference when the caller started it (checkLineUps).
 * The evidence goes from strong to weak: a frame that lines up as it is stays; the others get a
 * feature homography (AKAZE + RANSAC, refined), which decides alone when it is strong and its
 * blocks confirm it or, corrected by their residual motion, it lines up; otherwise a global
 * estimate (phase correlation of gradients, refined) joins it, and the block agreement chooses
 * among those and leaving the frame as it is.
 */
export function frameAligner(pool: WorkerPool, width: number, height: number, refGrey: Uint8Array, reference?: Promise<LineUpReference>): FrameAligner {
  const factor = thumbnailFactor(width, height);
  const [thumbWidth, thumbHeight] = thumbnailSize(width, height, factor);
  const scale: Scale = { factor, width, height, thumbWidth, thumbHeight };
  const ref = reference ?? pool.run('lineUpReference', [refGrey, thumbWidth, thumbHeight]);
  // Awaited only once a frame is checked: should the job fail first (a later frame that cannot be
  // decoded) and the pool reject the task with that failure, nothing would be there to handle it,
  // and an unhandled rejection ends the process. Whoever awaits it still sees its failure.
  ref.catch(() => {});
  // OpenCV detects the reference's features once, when the first frame that needs them asks.
  let refFeatures: Promise<TaskResult<'detectFeatures'>> | null = null;
  // The OpenCV thread takes its own tasks in the order asked, so frames take turns there: a
  // frame's features and then its matches, before the next frame's features. Were every frame's
  // features asked for at once, the first frame's matches would wait behind all of them, and the
  // refinement and warp that follow with them, while the other threads had nothing to do. The
  // next frame's features are asked for as soon as this frame's matches are (not once they are
  // found): the OpenCV thread, which takes its own tasks first, goes on to them, and this frame's
  // refinement goes to another thread, where it waited for the OpenCV thread before.
  let cvTurns: Promise<unknown> = Promise.resolve();
  const matchOnCvThread = (grey: Uint8Array): Promise<TaskResult<'matchHomography'>> => {
    let asked!: () => void;
    const previous = cvTurns;
    cvTurns = new Promise<void>((resolve) => (asked = resolve));
    return previous.then(async () => {
      try {
        refFeatures ??= pool.run('detectFeatures', [refGrey, thumbWidth, thumbHeight], ON_CV_THREAD);
        const features = pool.run('detectFeatures', [grey, thumbWidth, thumbHeight], ON_CV_THREAD);
        const [r, f] = await Promise.all([refFeatures, features]);
        return pool.run('matchHomography', [r, f], ON_CV_THREAD);
      } finally {
        asked();
      }
    });
  };

  const decideFrame = async (index: number, grey: Uint8Array, check: Promise<LineUp>): Promise<FrameReport> => {
    const lineUp = await check;
    if (linesUp(lineUp, scale)) {
      return { index, method: 'identity', shiftPx: 0, confidence: round(lineUp.agreement, 3), inliers: 0, inlierRatio: 1, homography: IDENTITY, route: 'lined-up' };
    }
    const reference = await ref;
    // Each pair is matched as soon as its features exist, and refined on another thread while the
    // OpenCV thread detects the next frame's features.
    const e = await matchOnCvThread(grey)
      .then((match) => pool.run('refineEstimate', [match, reference.smoothed, lineUp.smoothed, thumbWidth, thumbHeight]))
      .catch(() => undefined);
    const judge = (motions: Homography[]) => pool.run('judgeMotions', [reference.level, lineUp.level, thumbWidth, thumbHeight, motions]);
    const globalEstimate = () => pool.run('globalEstimate', [reference.smoothed, reference.level, lineUp.smoothed, lineUp.level, thumbWidth, thumbHeight]);
    // A strong feature homography that the blocks confirm leaves the global estimate nothing to add
    // (confirms). The global estimate starts as soon as a frame is known to need it: at once when
    // its features are not strong, after the blocks' judgement and the line-up check when neither
    // lets them decide.
    let first: Agreement | null = null;
    let firstJudged: Homography[] = [];
    if (e && strongFeatures(e, lineUp, scale)) {
      const candidates = candidatesOf(lineUp, e, null, scale);
      firstJudged = candidates.map((c) => c.homography);
      first = await judge(firstJudged);
      if (confirms(first, firstJudged.indexOf(e.homography!))) return { ...decide(index, candidates, first, e, scale), route: 'features' };
      // Passers-by make more than a tenth of the blocks fail under any motion. The blocks that
      // still show the scene then say whether the homography, corrected by their residual motion,
      // lines up as closely as a frame left as it is must (linesUp): if so, no other motion could
      // bring it closer by the same measure.
      const after = await pool.run('lineUpAfter', [reference, grey, lineUp.smoothed, thumbWidth, thumbHeight, e.homography!]);
      if (after.drift * factor <= LINED_UP_PIXELS && isPlausible(after.homography, thumbWidth, thumbHeight)) {
        const corrected = { ...e, homography: after.homography };
        const candidates = candidatesOf(lineUp, corrected, null, scale);
        // the frame as it is was judged already; the corrected motions are new
        const { scores } = await judge(candidates.slice(1).map((c) => c.homography));
        const agreement = { textured: first.textured, scores: [first.scores[0]!, ...scores] };
        return { ...decide(index, candidates, agreement, corrected, scale), route: 'features' };
      }
    }
    const g = await globalEstimate();
    const candidates = candidatesOf(lineUp, e, g, scale);
    // Each motion's block scores depend on it alone: the motions already judged (the frame as it
    // is, the feature homography and its shift) are not judged again.
    const judged = new Map<string, BlockScores>();
    const key = (h: Homography) => h.join(',');
    firstJudged.forEach((h, k) => judged.set(key(h), first!.scores[k]!));
    const fresh = candidates.filter((c) => !judged.has(key(c.homography)));
    const agreement = await judge(fresh.map((c) => c.homography));
    fresh.forEach((c, k) => judged.set(key(c.homography), agreement.scores[k]!));
    return decide(index, candidates, { textured: agreement.textured, scores: candidates.map((c) => judged.get(key(c.homography))!) }, e, scale);
  };
  return {
    check: (grey) => ref.then((r) => pool.run('checkLineUp', [r, grey, thumbWidth, thumbHeight])),
    decide: decideFrame,
  };
}

/**
 * Decides how each frame is brought onto frame 0 (frames' pixels in shared memory, image/image.ts) from
 * their grey thumbnails (image/thumbnails.ts) and, when the caller started them, their line-up checks:
 * one report per frame, each as soon as that frame is decided (a frame that shows another scene
 * rejects with AlignmentFailed), by one frameAligner.
 */
function decideFrames(pool: WorkerPool, frames: RgbImage[], greys: Uint8Array[], lineUps?: LineUps): Array<Promise<FrameReport>> {
  const first = frames[0];
  if (!first) return [];
  const [refGrey, ...rest] = greys as [Uint8Array, ...Uint8Array[]];
  lineUps ??= checkLineUps(pool, Promise.resolve(first), greys.map((g) => Promise.resolve(g)));
  const aligner = frameAligner(pool, first.width, first.height, refGrey, lineUps.reference);
  const reports: Array<Promise<FrameReport>> = [Promise.resolve(REFERENCE_REPORT)];
  // Each frame is decided as soon as its own line-up check is in, not once every check is.
  for (const [k, grey] of rest.entries()) reports.push(aligner.decide(k + 1, grey, lineUps.checks[k]!));
  return reports;
}
/** The reports of decideFrames in frame order, once all are in; throws the first frame's AlignmentFailed (in frame order). */
async function inOrder(reports: Array<Promise<FrameReport>>): Promise<FrameReport[]> {
  await Promise.allSettled(reports);
  return Promise.all(reports);
}

/** Row bands per pool thread a warp is cut into: short tasks, so the OpenCV thread is soon free again for the next frame's features. */
const WARP_BANDS_PER_THREAD = 4;

/** A frame brought onto the reference: its pixels and, when alignment moved it, their thumbnail. */
export interface Warped {
  image: RgbImage;
  /** The warped pixels' thumbnail (image/thumbnails.ts, RGB only), made as they were warped; null for a frame left as it is (its own thumbnail stands). */
  thumbnail: RgbImage | null;
}

/**
 * `frame` warped at full size by its report's homography, in row bands across the pool's threads,
 * with the warped pixels' thumbnail made band by band as they are written (align/warp.ts
 * warpThumbnailRows); the frame itself for 'reference' and 'identity'.
 */
export async function warpFrame(pool: WorkerPool, frame: RgbImage, r: FrameReport): Promise<Warped> {
  if (r.method !== 'homography' && r.method !== 'translation') return { image: frame, thumbnail: null };
  const { width, height } = frame;
  // the bands cover every row, and the warp writes every byte of its rows
  const warped = sharedImage(width, height, true);
  const factor = thumbnailFactor(width, height);
  const thumbnail = sharedImage(Math.ceil(width / factor), Math.ceil(height / factor));
  // bands of whole thumbnail rows, so that each band makes its own rows of the thumbnail
  const bands = rowRanges(thumbnail.height, pool.size * WARP_BANDS_PER_THREAD).map(
    ([start, end]): TaskArgs<'warpThumbnailRows'> => [frame, warped, r.homography, thumbnail.data, factor, start, end],
  );
  await pool.all('warpThumbnailRows', bands);
  return { image: warped, thumbnail };
}

/**
 * Aligns every frame to frame 0 (all frames have its size; pixels in shared memory, image/image.ts).
 * `greys` are the frames' grey thumbnails when the caller already has them, `lineUps` their
 * line-up checks when the caller started them (checkLineUps). `onFrameAligned` is called as each
 * frame is done, with its index and whether it was warped (the job's progress and the score's
 * measures of a frame left as it is, pipeline.ts).
 */
export async function alignFrames(
  pool: WorkerPool,
  frames: RgbImage[],
  greys?: Uint8Array[],
  lineUps?: LineUps,
  onFrameAligned?: (index: number, warped: boolean) => void,
): Promise<AlignResult> {
  greys ??= (await makeThumbnails(pool, frames, true)).map((t) => t.grey!);
  const reports = decideFrames(pool, frames, greys, lineUps);
  // Each frame is warped as soon as it is decided, while the OpenCV thread works on the next frames.
  const warping = reports.map((report, i) =>
    report.then(async (r) => {
      const warped = await warpFrame(pool, frames[i]!, r);
      onFrameAligned?.(i, warped.image !== frames[i]);
      return warped;
    }),
  );
  warping.forEach((w) => w.catch(() => {}));
  const frameReports = await inOrder(reports);
  const warped = await Promise.all(warping);
  return { frames: warped.map((w) => w.image), thumbnails: warped.map((w) => w.thumbnail), frameReports };
}
