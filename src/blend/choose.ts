import type { FrameStats } from './engine/image/analysis.js';

/** What `auto` may pick. */
export const AUTO_CHOICES = ['exposure', 'focus', 'median', 'mean'] as const;
export type AutoChoice = (typeof AUTO_CHOICES)[number];

/**
 * `auto`: brackets (frames whose brightness differs strongly) are fused, focus brackets
 * (different tiles sharpest in different frames, by a wide margin) are stacked, three or more
 * frames of one scene take the median (it removes what moves), two the mean.
 */
export function chooseBlendType(stats: FrameStats[]): { type: AutoChoice; reason: string } {
  const lumas = stats.map((s) => s.meanLuma);
  const darkest = Math.min(...lumas);
  const brightest = Math.max(...lumas);
  if (brightest - darkest > 40 || (darkest > 0 && brightest / Math.max(darkest, 1) > 1.8)) {
    return { type: 'exposure', reason: `mean brightness ranges from ${darkest.toFixed(0)} to ${brightest.toFixed(0)}` };
  }
  const tiles = stats[0]!.tileSharpness.length;
  const sharpestFrames = new Set<number>();
  let decisiveTiles = 0;
  for (let t = 0; t < tiles; t++) {
    const values = stats.map((s) => s.tileSharpness[t]!);
    const max = Math.max(...values);
    const min = Math.min(...values);
    // Flat tiles (sky, walls) say nothing about focus.
    if (max < 20 || max < 4 * Math.max(min, 1e-6)) continue;
    decisiveTiles++;
    sharpestFrames.add(values.indexOf(max));
  }
  if (decisiveTiles >= tiles / 5 && sharpestFrames.size >= 2) {
    return { type: 'focus', reason: `${decisiveTiles} of ${tiles} tiles are much sharper in one frame, in ${sharpestFrames.size} different frames` };
  }
  if (stats.length >= 3) return { type: 'median', reason: `${stats.length} frames of one scene` };
  return { type: 'mean', reason: 'two frames of one scene' };
}
