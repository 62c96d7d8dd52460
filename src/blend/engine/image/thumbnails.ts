import { type RgbImage, rowRanges, sharedImage, thumbnailSize } from './image.js';
import type { TaskArgs, WorkerPool } from '../threads/pool.js';

/**
 * The small copies (~1000 px) that `auto`, alignment and the quality score decide on. A frame's
 * copies are made once, in one pass over its pixels, and shared by all three.
 */
export interface Thumbnail {
  /** Means of whole factor × factor blocks, the last ones cut short: ceil(width / factor) wide. */
  rgb: RgbImage;
  /** BT.601 luma of the whole blocks (align/grey.ts), `thumbnailSize(width, height, factor)` (image.ts); null when not asked for. */
  grey: Uint8Array | null;
}

const THUMBNAIL_SIDE = 1000;

/** The whole factor that brings the longest side nearest THUMBNAIL_SIDE (whole factors keep block means exact and fast). */
export function thumbnailFactor(width: number, height: number): number {
  return Math.max(1, Math.round(Math.max(width, height) / THUMBNAIL_SIDE));
}

/** A frame's thumbnail, made in the pool's threads by row ranges; `withGrey` adds alignment's grey copy. */
export async function makeThumbnail(pool: WorkerPool, frame: RgbImage, withGrey: boolean): Promise<Thumbnail> {
  const { width, height } = frame;
  const factor = thumbnailFactor(width, height);
  const [greyWidth, greyHeight] = thumbnailSize(width, height, factor);
  const thumbnail: Thumbnail = {
    rgb: sharedImage(Math.ceil(width / factor), Math.ceil(height / factor)),
    grey: withGrey ? new Uint8Array(new SharedArrayBuffer(greyWidth * greyHeight)) : null,
  };
  const args = rowRanges(thumbnail.rgb.height, pool.size).map(
    ([start, end]): TaskArgs<'thumbnailRows'> => [frame.data, width, height, factor, thumbnail.rgb.data, start, end, thumbnail.grey],
  );
  await pool.all('thumbnailRows', args);
  return thumbnail;
}

/** Thumbnails of frames (makeThumbnail), all at once. */
export function makeThumbnails(pool: WorkerPool, frames: RgbImage[], withGrey: boolean): Promise<Thumbnail[]> {
  return Promise.all(frames.map((f) => makeThumbnail(pool, f, withGrey)));
}
