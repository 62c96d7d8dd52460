/**
 * What deghosting (deghost/deghost.ts) hands the blends, as types, and the one scan both sides make
 * of a mask's row (`fullOutside`): the pyramid's level-0 weights (pyramid/level-zero.ts), the
 * weighted mean (point/stack-weighted.ts) and the registry read them without reaching the code that
 * makes the masks.
 */

export interface DeghostMasks {
  /** The frame that always counts. */
  reference: number;
  /** Per frame, 255 where it counts, 0 where it shows something the reference does not; null where it counts everywhere (always the reference's). */
  masks: Array<Uint8Array | null>;
  /** Per frame with a mask, per row y the columns [x0, x1) at 2y, 2y + 1 outside of which its mask is 255 (x0 = x1: all of the row). */
  spans: Array<Int32Array | null>;
  /** Per frame with a mask, the reference's R, G, B values (256 each) brought to the frame's exposure. */
  toFrame: Array<Uint8Array | null>;
}

export type DeghostReference = 'first' | 'middle-exposure';

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
