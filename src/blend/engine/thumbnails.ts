import type { thumbnailRows } from './analysis.js';
import { thumbnailSize } from './align-grey.js';
import { type RgbImage, rowRanges, sharedImage } from './image.js';
import { engineModule, type WorkerPool } from './pool.js';

/**
 * The small copies (~1000 px) that `auto`, alignment and the quality score decide on. A frame's
 * copies are made once, in one pass over its pixels, and shared by all three.
 */
export interface Thumbnail {
  /** Means of whole factor × factor blocks, the last ones cut short: ceil(width / factor) wide. */
  rgb: RgbImage;
  /** BT.601 luma of the whole blocks (align-grey.ts), `thumbnailSize(width, height, factor)`; null when not asked for. */
  grey: Uint8Array | null;
}

const THUMBNAIL_SIDE = 1000;

/** The whole factor that brings the longest side nearest THUMBNAIL_SIDE (whole factors keep block means exact and fast). */
export function thumbnailFactor(width: number, height: number): number {
  return Math.max(1, Math.round(Math.max(width, height) / THUMBNAIL_SIDE));
}

/** Thumbnails of same-sized frames, made in the pool's threads by row ranges; `withGrey` adds alignment's grey copies. */
export async function makeThumbnails(pool: WorkerPool, frames: RgbImage[], withGrey: boolean): Promise<Thumbnail[]> {
  if (frames.length === 0) return [];
  const { width, height } = frames[0]!;
  const factor = thumbnailFactor(width, height);
  const [greyWidth, greyHeight] = thumbnailSize(width, height, factor);
  const thumbnails: Thumbnail[] = frames.map(() => ({
    rgb: sharedImage(Math.ceil(width / factor), Math.ceil(height / factor)),
    grey: withGrey ? new Uint8Array(new SharedArrayBuffer(greyWidth * greyHeight)) : null,
  }));
  const rows = rowRanges(thumbnails[0]!.rgb.height, pool.size);
  const args = frames.flatMap((f, i) =>
    rows.map(([start, end]): Parameters<typeof thumbnailRows> => [f.data, width, height, factor, thumbnails[i]!.rgb.data, start, end, thumbnails[i]!.grey]),
  );
  await pool.all(engineModule('analysis'), 'thumbnailRows', args);
  return thumbnails;
}
