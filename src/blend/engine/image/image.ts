import { sharedBuffer } from './buffers.js';

/**
 * The engine's picture: 8-bit RGB, interleaved, rows top to bottom. Pixel buffers live in
 * SharedArrayBuffers so worker threads read and write them without copies; a job's large ones
 * come from its arena (buffers.ts).
 */
export interface RgbImage {
  width: number;
  height: number;
  /** `width * height * 3` bytes. */
  data: Uint8Array;
}

/**
 * An RGB image whose pixels can be shared with worker threads: zeroed, unless `overwritten` says
 * the caller writes every byte before any is read (a buffer reused from an earlier job then skips
 * its zeroing: 25–60 ms for 12 MP measured on a loaded VM).
 */
export function sharedImage(width: number, height: number, overwritten = false): RgbImage {
  return { width, height, data: new Uint8Array(sharedBuffer(width * height * 3, overwritten)) };
}

/** A Float32Array over shared memory (weights, pyramids, planes). */
export function sharedFloats(length: number): Float32Array {
  return new Float32Array(new SharedArrayBuffer(length * 4));
}

/** Copies `bytes` into shared memory, unless they already are. */
export function toShared(width: number, height: number, bytes: Uint8Array): RgbImage {
  if (bytes.buffer instanceof SharedArrayBuffer) return { width, height, data: bytes };
  // every byte is copied over: a reused buffer needs no zeroing
  const image = { width, height, data: new Uint8Array(sharedBuffer(width * height * 3, true)) };
  image.data.set(bytes);
  return image;
}

/** Splits rows [0, height) into `parts` contiguous ranges of nearly equal size. */
export function rowRanges(height: number, parts: number): Array<[number, number]> {
  const n = Math.max(1, Math.min(parts, height));
  const ranges: Array<[number, number]> = [];
  for (let i = 0; i < n; i++) ranges.push([Math.floor((i * height) / n), Math.floor(((i + 1) * height) / n)]);
  return ranges;
}

/** Width and height of a frame's thumbnail: one pixel per whole factor × factor block. */
export function thumbnailSize(width: number, height: number, factor: number): [number, number] {
  return [Math.floor(width / factor), Math.floor(height / factor)];
}

/**
 * The columns [x0, x1) of a mask's row (`mask[start + x]`, x < width) outside of which it is 255:
 * the first column below 255 and one past the last; x0 = x1 = width where it is 255 throughout.
 */
export function fullOutside(mask: Uint8Array, start: number, width: number): [number, number] {
  let first = 0, last = width;
  while (first < width && mask[start + first] === 255) first++;
  while (last > first && mask[start + last - 1] === 255) last--;
  return [first, last];
}
