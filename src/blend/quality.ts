import type { FrameStats } from './engine/image/analysis.js';

export interface QualityMeasures {
  /** Mean block correlation (image/analysis.ts) of each aligned frame with the reference; null when alignment was off. */
  correlation: number | null;
  inputs: FrameStats[];
  result: FrameStats;
  /** Median residual of the frames against the result (0..255); null for types where frames are meant to differ. */
  ghosting: number | null;
}

export interface Quality {
  score: number;
  alignment: number;
  sharpness: number;
  exposure: number;
  ghosting: number | null;
}

const WEIGHTS = { alignment: 0.25, sharpness: 0.2, exposure: 0.2, ghosting: 0.35 };
/** Differences this small are not defects: 90 % of the sharpest input's detail, 2 points of clipped pixels. */
const SHARPNESS_FULL_MARKS = 0.9;
const EXPOSURE_TOLERANCE = 0.02;
/** Tiles whose typical input has less detail than this (variance of the Laplacian) are flat: they do not vote. */
const FLAT_TILE = 20;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/**
 * Detail kept, tile by tile: each tile of the result against the same tile of the typical (median)
 * input, noise taken out of both; the median over the tiles. Against the typical input rather than
 * the sharpest, because a passer-by or a star field in one frame makes it "sharpest" without making
 * it the picture to match; a focus stack's result beats its typical (blurred) input everywhere.
 */
function relativeSharpness(inputs: FrameStats[], result: FrameStats): number {
  const detail = (s: FrameStats, tile: number) => Math.max(0, s.tileSharpness[tile]! - 20 * s.noise * s.noise);
  const ratios: number[] = [];
  for (let tile = 0; tile < result.tileSharpness.length; tile++) {
    const typical = median(inputs.map((s) => detail(s, tile)));
    if (typical < FLAT_TILE) continue;
    ratios.push(clamp01(detail(result, tile) / (SHARPNESS_FULL_MARKS * typical)));
  }
  return ratios.length ? median(ratios) : 1;
}

const round = (x: number) => Math.round(x * 10_000) / 10_000;
const clamp01 = (x: number) => Math.min(1, Math.max(0, x));

/**
 * The quality score (docs/blend.md): a weighted geometric mean of four components in 0..1,
 * so one bad component pulls the score down whatever the others say.
 * - alignment: how well the aligned frames correlate with the reference, block by block (1 when alignment is off);
 * - sharpness: noise-corrected variance of the Laplacian of the result, tile by tile, relative to the typical input;
 * - exposure: share of unclipped pixels relative to the best input;
 * - ghosting (median, mean, composite): 1 − median residual of the frames against the result / 32.
 */
export function scoreQuality(m: QualityMeasures): Quality {
  const alignment = m.correlation === null ? 1 : clamp01((m.correlation - 0.5) / 0.45);
  const sharpness = relativeSharpness(m.inputs, m.result);
  const usable = (s: FrameStats) => 1 - s.clippedDark - s.clippedBright;
  const bestUsable = Math.max(...m.inputs.map(usable));
  const exposure = bestUsable > 0 ? clamp01((usable(m.result) + EXPOSURE_TOLERANCE) / bestUsable) : 1;
  const ghosting = m.ghosting === null ? null : clamp01(1 - m.ghosting / 32);
  const parts: Array<[number, number]> = [
    [alignment, WEIGHTS.alignment],
    [sharpness, WEIGHTS.sharpness],
    [exposure, WEIGHTS.exposure],
  ];
  if (ghosting !== null) parts.push([ghosting, WEIGHTS.ghosting]);
  const totalWeight = parts.reduce((sum, [, w]) => sum + w, 0);
  const logScore = parts.reduce((sum, [value, w]) => sum + w * Math.log(Math.max(value, 1e-6)), 0) / totalWeight;
  return { score: round(Math.exp(logScore)), alignment: round(alignment), sharpness: round(sharpness), exposure: round(exposure), ghosting: ghosting === null ? null : round(ghosting) };
}
